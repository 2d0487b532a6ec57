/* backing_internal: what backing.c and backing_ready.c share. Not installed. */
#ifndef SHMB_BACKING_INTERNAL_H
#define SHMB_BACKING_INTERNAL_H

#include "shmbench/backing.h"

/* What an error about b names: its segment's name, or its kind ("memfd"). */
const char *shmb_backing_object(const shmb_backing_t *b);

#endif

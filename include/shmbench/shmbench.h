/* shmbench: micro-benchmarks of the POSIX shared-memory path of an
 * inter-process transfer engine; the one header a user includes.
 * Conventions: symbols shmb_<module>_<verb>, types shmb_<thing>_t, macros
 * SHMB_; functions return 0 (or a count) or -errno, out-parameters written
 * on success only, a failed system call recorded (shmbench/error.h); bytes
 * and nanoseconds unless a name says (_kb = 1024 bytes, _mb = 1024 KB); the
 * library never prints, exits or aborts. Needs _POSIX_C_SOURCE >= 199309L. */
#ifndef SHMBENCH_SHMBENCH_H
#define SHMBENCH_SHMBENCH_H

#define SHMB_VERSION "0.1.0"

#include "shmbench/alloc_bench.h"
#include "shmbench/alloc_grow.h"
#include "shmbench/alloc_ready.h"
#include "shmbench/arena.h"
#include "shmbench/backing.h"
#include "shmbench/channel.h"
#include "shmbench/clock.h"
#include "shmbench/copy.h"
#include "shmbench/error.h"
#include "shmbench/file.h"
#include "shmbench/fipc_classic.h"
#include "shmbench/fipc_jemalloc.h"
#include "shmbench/handoff_bench.h"
#include "shmbench/lookup.h"
#include "shmbench/lookup_bench.h"
#include "shmbench/mooncake.h"
#include "shmbench/notes.h"
#include "shmbench/offset_alloc.h"
#include "shmbench/paired.h"
#include "shmbench/paths.h"
#include "shmbench/peer.h"
#include "shmbench/progress.h"
#include "shmbench/report.h"
#include "shmbench/rng.h"
#include "shmbench/segment.h"
#include "shmbench/stats.h"
#include "shmbench/sysinfo.h"
#include "shmbench/transfer_bench.h"
#include "shmbench/workload.h"

#endif

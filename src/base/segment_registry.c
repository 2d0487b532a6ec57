/* segment_registry: this process's live segment names and tracked files,
 * which a fatal signal's handler (segment_signals.c) unlinks, the creations
 * in flight it waits for, and the set of signals it catches. */
#include "shmbench/segment.h"

#include "segment_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The registry: full paths and what fstat said of each file, so a handler
 * unlinks (async-signal-safe) a path only while it still names that file.
 * The slots are one shared anonymous mapping (MAP_NORESERVE), walked without
 * a lock over [0, used): shared, so a forked peer can unlink its dead
 * parent's names (shmb_segment_unlink_inherited); the child registers into
 * a registry of its own (forked()). A slot's state says whether its path is
 * a live file of ours (LIVE) or about to be created (PENDING), and lets one
 * walker claim it (UNLINKING). Additions and removals take a mutex with the
 * cleanup signals blocked, so a handler never interrupts them. */
enum { SLOT_FREE, SLOT_PENDING, SLOT_LIVE, SLOT_UNLINKING };

typedef struct slot {
    atomic_int state;
    int next_free; /* index of the next free slot, -1: none */
    dev_t dev;     /* the file created: fstat's st_dev, st_ino, st_uid, st_mode */
    ino_t ino;
    uid_t uid;
    mode_t mode;
    char path[sizeof(SHM_DIR) + SHMB_SEGMENT_NAME_MAX + 1];
} slot_t;

typedef struct registry {
    atomic_int used; /* slots handed out at least once */
    slot_t slots[SHMB_SEGMENT_REGISTRY_SLOTS];
} registry_t;

/* Files outside /dev/shm (a temporary output), few and with long paths. */
typedef struct file_slot {
    atomic_int state;
    char path[PATH_MAX];
} file_slot_t;

static file_slot_t files[SHMB_SEGMENT_TRACKED_FILES];

static registry_t *_Atomic reg;  /* this process's, NULL until the first registration */
static registry_t *inherited;    /* the parent's, in a forked child; else NULL */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static int free_head = -1;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* The signals whose default action ends the process and that we catch. */
static sigset_t cleanup_signals;
static pthread_once_t cleanup_signals_once = PTHREAD_ONCE_INIT;

static int is_fatal_by_default(int sig)
{
    switch (sig) {
    case SIGKILL: case SIGSTOP:                  /* cannot be caught */
    case SIGXFSZ:                                /* ignored: EFBIG instead */
    case SIGCHLD: case SIGCONT: case SIGTSTP: case SIGTTIN: case SIGTTOU:
    case SIGURG: case SIGWINCH:                  /* default: ignore or stop */
        return 0;
    default:
        return 1;
    }
}

static void init_cleanup_signals(void)
{
    sigemptyset(&cleanup_signals);
    for (int sig = 1; sig < 32; sig++)
        if (is_fatal_by_default(sig))
            sigaddset(&cleanup_signals, sig);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        sigaddset(&cleanup_signals, sig);
}

const sigset_t *shmb_segment_fatal_signals(void)
{
    pthread_once(&cleanup_signals_once, init_cleanup_signals);
    return &cleanup_signals;
}

void shmb_segment_block_signals(sigset_t *old)
{
    sigset_t set = *shmb_segment_fatal_signals();
    sigdelset(&set, SIGSEGV);
    sigdelset(&set, SIGBUS);
    sigdelset(&set, SIGFPE);
    sigdelset(&set, SIGILL);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

/* Creations between shm_open and the registry, of every thread, and whether a
 * cleanup signal has begun ending the process. Signals blocked on the
 * creating thread do not stop another thread from taking a process-wide
 * one: its handler waits until no creation is in flight before it unlinks,
 * and a creation that starts once the process is dying does not create. */
static atomic_int creating;
static atomic_int dying;
static _Thread_local int t_creating;

void shmb_segment_creation_begin(sigset_t *old)
{
    shmb_segment_block_signals(old);
    atomic_fetch_add(&creating, 1);
    t_creating = 1;
    if (atomic_load(&dying)) { /* another thread's handler is ending the process */
        t_creating = 0;
        atomic_fetch_sub(&creating, 1);
        pthread_sigmask(SIG_SETMASK, old, NULL);
        for (;;)
            pause();
    }
}

void shmb_segment_creation_end(const sigset_t *old)
{
    t_creating = 0;
    atomic_fetch_sub(&creating, 1);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

size_t shmb_segment_unlink_dying(void)
{
    atomic_store(&dying, 1);
    while (atomic_load(&creating) > t_creating) /* another thread's name not yet registered */
        sched_yield();
    return shmb_segment_unlink_all();
}

static slot_t *slot_at(int i)
{
    return &atomic_load_explicit(&reg, memory_order_acquire)->slots[i];
}

/* In the child of a fork: the parent's registry and tracked files stay the
 * parent's (read by shmb_segment_unlink_inherited only), this process
 * registers into a fresh registry of its own. The child has one thread. */
static void forked(void)
{
    inherited = atomic_load(&reg);
    atomic_store(&reg, NULL);
    atomic_store(&creating, 0); /* other threads' creations in flight stayed in the parent */
    free_head = -1;
    pthread_mutex_init(&registry_lock, NULL);
    for (int i = 0; i < SHMB_SEGMENT_TRACKED_FILES; i++)
        atomic_store(&files[i].state, SLOT_FREE);
}

static void watch_forks(void)
{
    pthread_atfork(NULL, NULL, forked);
}

int shmb_segment_slot_take(void)
{
    pthread_once(&atfork_once, watch_forks);
    pthread_mutex_lock(&registry_lock);
    registry_t *r = atomic_load_explicit(&reg, memory_order_acquire);
    if (!r) {
        r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (r == MAP_FAILED)
            r = NULL;
        else
            atomic_store_explicit(&reg, r, memory_order_release);
    }
    int ret = free_head;
    if (!r) {
        ret = -errno;
    } else if (ret >= 0) {
        free_head = r->slots[ret].next_free;
    } else if (atomic_load(&r->used) == SHMB_SEGMENT_REGISTRY_SLOTS) {
        ret = -ENOBUFS;
    } else {
        ret = atomic_load(&r->used);
        atomic_store_explicit(&r->used, ret + 1, memory_order_release);
    }
    pthread_mutex_unlock(&registry_lock);
    return ret;
}

/* It stops being LIVE first (waiting for a walker that is unlinking it). */
void shmb_segment_slot_give(int i)
{
    slot_t *s = slot_at(i);
    for (;;) {
        int st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st != SLOT_UNLINKING &&
            atomic_compare_exchange_weak_explicit(&s->state, &st, SLOT_FREE, memory_order_acq_rel,
                                                  memory_order_relaxed))
            break;
        if (st == SLOT_UNLINKING)
            sched_yield();
    }
    sigset_t old;
    shmb_segment_block_signals(&old);
    pthread_mutex_lock(&registry_lock);
    s->next_free = free_head;
    free_head = i;
    pthread_mutex_unlock(&registry_lock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void shmb_segment_slot_pending(int i, const char *name)
{
    slot_t *s = slot_at(i);
    snprintf(s->path, sizeof(s->path), "%s%s", SHM_DIR, name);
    atomic_store_explicit(&s->state, SLOT_PENDING, memory_order_release);
}

void shmb_segment_slot_unpend(int i)
{
    atomic_store_explicit(&slot_at(i)->state, SLOT_FREE, memory_order_release);
}

void shmb_segment_slot_publish(int i, const char *name, const struct stat *st)
{
    slot_t *s = slot_at(i);
    snprintf(s->path, sizeof(s->path), "%s%s", SHM_DIR, name);
    s->dev = st->st_dev;
    s->ino = st->st_ino;
    s->uid = st->st_uid;
    s->mode = st->st_mode;
    atomic_store_explicit(&s->state, SLOT_LIVE, memory_order_release);
}

/* Claims a LIVE or PENDING slot for this walker, unlinks its path if it
 * still names the file created (LIVE: dev, inode, owner, mode), or if it is a
 * file as shm_open would have created it (PENDING: a regular file of this
 * user, mode 0600: the name carries the creator's pid and 64 random bits, and
 * O_EXCL made it ours), frees the state. 1 if unlinked. */
static int unlink_checked(slot_t *s)
{
    int was = atomic_load_explicit(&s->state, memory_order_acquire);
    if ((was != SLOT_LIVE && was != SLOT_PENDING) ||
        !atomic_compare_exchange_strong_explicit(&s->state, &was, SLOT_UNLINKING, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return 0;
    struct stat st;
    int ours = lstat(s->path, &st) == 0 && st.st_uid == (was == SLOT_LIVE ? s->uid : geteuid()) &&
               (was == SLOT_LIVE ? st.st_dev == s->dev && st.st_ino == s->ino && st.st_mode == s->mode
                                 : st.st_mode == (S_IFREG | 0600));
    int ret = ours && unlink(s->path) == 0;
    atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
    return ret;
}

static size_t unlink_registry(registry_t *r)
{
    size_t n = 0;
    int used = r ? atomic_load_explicit(&r->used, memory_order_acquire) : 0;
    for (int i = 0; i < used; i++)
        n += (size_t)unlink_checked(&r->slots[i]);
    return n;
}

size_t shmb_segment_unlink_all(void)
{
    size_t n = 0;
    for (int i = 0; i < SHMB_SEGMENT_TRACKED_FILES; i++) {
        int live = SLOT_LIVE;
        if (!atomic_compare_exchange_strong_explicit(&files[i].state, &live, SLOT_UNLINKING,
                                                     memory_order_acq_rel, memory_order_relaxed))
            continue;
        n += unlink(files[i].path) == 0;
        atomic_store_explicit(&files[i].state, SLOT_FREE, memory_order_release);
    }
    return n + unlink_registry(atomic_load_explicit(&reg, memory_order_acquire));
}

size_t shmb_segment_unlink_inherited(void)
{
    return unlink_registry(inherited);
}

int shmb_segment_adopt(const char *name)
{
    char path[sizeof(SHM_DIR) + SHMB_SEGMENT_NAME_MAX + 1];
    const char *slash = name[0] == '/' ? "" : "/";
    if (strlen(name) + (*slash ? 1 : 0) > SHMB_SEGMENT_NAME_MAX)
        return -ENAMETOOLONG;
    snprintf(path, sizeof(path), "%s%s%s", SHM_DIR, slash, name);
    struct stat st;
    if (lstat(path, &st) != 0)
        return -errno;
    sigset_t old;
    shmb_segment_block_signals(&old);
    int slot = shmb_segment_slot_take();
    if (slot >= 0)
        shmb_segment_slot_publish(slot, path + sizeof(SHM_DIR) - 1, &st);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return slot;
}

static _Thread_local sigset_t held;

void shmb_segment_hold_signals(void)
{
    shmb_segment_block_signals(&held);
}

void shmb_segment_release_signals(void)
{
    pthread_sigmask(SIG_SETMASK, &held, NULL);
}

void shmb_segment_disown(int slot)
{
    if (slot >= 0)
        shmb_segment_slot_give(slot);
}

size_t shmb_segment_registered(void)
{
    size_t n = 0;
    registry_t *r = atomic_load_explicit(&reg, memory_order_acquire);
    int used = r ? atomic_load_explicit(&r->used, memory_order_acquire) : 0;
    for (int i = 0; i < used; i++)
        n += atomic_load_explicit(&r->slots[i].state, memory_order_acquire) == SLOT_LIVE;
    return n;
}

int shmb_segment_track_file(const char *path)
{
    if (strlen(path) >= PATH_MAX)
        return -ENAMETOOLONG;
    pthread_once(&atfork_once, watch_forks);
    for (int i = 0; i < SHMB_SEGMENT_TRACKED_FILES; i++) {
        int free_state = SLOT_FREE;
        /* UNLINKING while the path is written: no walker reads it. */
        if (!atomic_compare_exchange_strong(&files[i].state, &free_state, SLOT_UNLINKING))
            continue;
        snprintf(files[i].path, sizeof(files[i].path), "%s", path);
        atomic_store_explicit(&files[i].state, SLOT_LIVE, memory_order_release);
        return i;
    }
    return -ENOBUFS;
}

void shmb_segment_untrack_file(int id)
{
    if (id < 0 || id >= SHMB_SEGMENT_TRACKED_FILES)
        return;
    for (;;) {
        int st = SLOT_LIVE;
        if (atomic_compare_exchange_weak(&files[id].state, &st, SLOT_FREE) || st == SLOT_FREE)
            return;
        sched_yield();
    }
}

size_t shmb_segment_forget_all(void)
{
    sigset_t old;
    shmb_segment_block_signals(&old);
    size_t n = 0;
    for (int i = 0; i < SHMB_SEGMENT_TRACKED_FILES; i++)
        n += atomic_exchange(&files[i].state, SLOT_FREE) == SLOT_LIVE;
    pthread_mutex_lock(&registry_lock);
    registry_t *r = atomic_load_explicit(&reg, memory_order_acquire);
    int used = r ? atomic_load_explicit(&r->used, memory_order_acquire) : 0;
    free_head = -1;
    for (int i = used - 1; i >= 0; i--) {
        n += atomic_exchange(&r->slots[i].state, SLOT_FREE) == SLOT_LIVE;
        r->slots[i].next_free = free_head;
        free_head = i;
    }
    pthread_mutex_unlock(&registry_lock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return n;
}

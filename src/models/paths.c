/* paths: the table of translation paths (paths_internal.h) and the names it
 * gives (shmbench/paths.h); a new path is one row here and its functions. */
#include "paths_internal.h"

#include "shmbench/error.h"
#include "shmbench/fipc_classic.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- mooncake: relocateSharedMemoryAddress (the view's path) over the view's buffers ---- */

static int mooncake_setup(const shmb_path_t *path, shmb_path_state_t *state, const shmb_path_view_t *view)
{
    (void)path;
    if (!view->shm_names || !view->mooncake_ops.attach || view->n == 0)
        return -EINVAL;
    shmb_mooncake_buffer_t *buffers = calloc(view->n, sizeof(*buffers));
    if (!buffers)
        return shmb_error_record("malloc", ENOMEM, NULL);
    for (size_t id = 0; id < view->n; id++) {
        buffers[id].addr = view->segments[id].peer_base;
        buffers[id].length = view->segments[id].size;
        buffers[id].shm_path = view->shm_names[id];
    }
    int ret = shmb_mooncake_create(buffers, view->n, SHMB_PATH_MOONCAKE_TARGET_ID,
                                   SHMB_PATH_MOONCAKE_OTHER_SEGMENTS, &view->mooncake_ops, &state->mooncake);
    free(buffers);
    return ret == -ENOMEM ? shmb_error_record("malloc", ENOMEM, NULL) : ret;
}

static void *mooncake_translate(const shmb_path_t *path, const shmb_path_state_t *state,
                                const shmb_lookup_request_t *request)
{
    (void)path;
    void *out = NULL;
    shmb_mooncake_relocate(state->mooncake, SHMB_PATH_MOONCAKE_TARGET_ID, request->addr, request->len, &out);
    return out;
}

static uint64_t mooncake_batch(const shmb_path_t *path, const shmb_path_state_t *state,
                               const shmb_lookup_request_t *requests, size_t n)
{
    (void)path;
    return shmb_mooncake_relocate_batch(state->mooncake, SHMB_PATH_MOONCAKE_TARGET_ID, requests, n);
}

static uint64_t mooncake_chain(const shmb_path_t *path, const shmb_path_state_t *state,
                               const shmb_lookup_request_t *requests, const uint64_t *expected, size_t n)
{
    (void)path;
    return shmb_mooncake_relocate_chain(state->mooncake, SHMB_PATH_MOONCAKE_TARGET_ID, requests, expected, n);
}

static void mooncake_teardown(const shmb_path_t *path, shmb_path_state_t *state)
{
    (void)path;
    shmb_mooncake_destroy(state->mooncake);
    state->mooncake = NULL;
}

/* ---- flowipc_classic: the pool's base + the handle ---- */

static int classic_setup(const shmb_path_t *path, shmb_path_state_t *state, const shmb_path_view_t *view)
{
    (void)path;
    if (!view->pool_base || view->pool_bytes == 0)
        return -EINVAL;
    state->pool_base = view->pool_base;
    state->pool_bytes = view->pool_bytes;
    return 0;
}

static void *classic_translate(const shmb_path_t *path, const shmb_path_state_t *state,
                               const shmb_lookup_request_t *request)
{
    (void)path;
    return shmb_fipc_classic_to_address(state->pool_base, state->pool_bytes, request->pool_offset, request->len);
}

static uint64_t classic_batch(const shmb_path_t *path, const shmb_path_state_t *state,
                              const shmb_lookup_request_t *requests, size_t n)
{
    (void)path;
    return shmb_fipc_classic_translate_batch(state->pool_base, state->pool_bytes, requests, n);
}

static uint64_t classic_chain(const shmb_path_t *path, const shmb_path_state_t *state,
                              const shmb_lookup_request_t *requests, const uint64_t *expected, size_t n)
{
    (void)path;
    return shmb_fipc_classic_translate_chain(state->pool_base, state->pool_bytes, requests, expected, n);
}

static void classic_teardown(const shmb_path_t *path, shmb_path_state_t *state)
{
    (void)path;
    state->pool_base = NULL;
    state->pool_bytes = 0;
}

/* ---- flowipc_jemalloc: Shm_pool_repository::to_address, a pool per segment ---- */

static int jemalloc_setup(const shmb_path_t *path, shmb_path_state_t *state, const shmb_path_view_t *view)
{
    (void)path;
    if (view->n == 0)
        return -EINVAL;
    int ret = shmb_fipc_repo_create(&state->repo);
    for (size_t i = 0; i < view->n && ret == 0; i++)
        ret = shmb_fipc_repo_insert(state->repo, view->pool_ids ? view->pool_ids[i] : (uint32_t)i,
                                    view->segments[i].local_base, (size_t)view->segments[i].size);
    if (ret < 0) {
        shmb_fipc_repo_destroy(state->repo);
        state->repo = NULL;
    }
    return ret == -ENOMEM ? shmb_error_record("malloc", ENOMEM, NULL) : ret;
}

static void *jemalloc_translate(const shmb_path_t *path, const shmb_path_state_t *state,
                                const shmb_lookup_request_t *request)
{
    (void)path;
    return shmb_fipc_repo_to_address(state->repo, request->id, request->offset, request->len);
}

static uint64_t jemalloc_batch(const shmb_path_t *path, const shmb_path_state_t *state,
                               const shmb_lookup_request_t *requests, size_t n)
{
    (void)path;
    return shmb_fipc_repo_translate_batch(state->repo, requests, n);
}

static uint64_t jemalloc_chain(const shmb_path_t *path, const shmb_path_state_t *state,
                               const shmb_lookup_request_t *requests, const uint64_t *expected, size_t n)
{
    (void)path;
    return shmb_fipc_repo_translate_chain(state->repo, requests, expected, n);
}

static void jemalloc_teardown(const shmb_path_t *path, shmb_path_state_t *state)
{
    (void)path;
    shmb_fipc_repo_destroy(state->repo);
    state->repo = NULL;
}

/* ---- kernels: one segment table (shmbench/lookup.h), shared ---- */

/* The first kernel set up builds the table; the others use it. */
static int kernel_setup(const shmb_path_t *path, shmb_path_state_t *state, const shmb_path_view_t *view)
{
    (void)path;
    if (state->kernels == 0) {
        int ret = shmb_lookup_init(&state->table, view->segments, view->n);
        if (ret < 0)
            return ret == -ENOMEM ? shmb_error_record("malloc", ENOMEM, NULL) : ret;
    }
    state->kernels++;
    return 0;
}

static void *kernel_translate(const shmb_path_t *path, const shmb_path_state_t *state,
                              const shmb_lookup_request_t *request)
{
    return shmb_lookup_translate(&state->table, (shmb_lookup_strategy_t)path->kernel, request);
}

static uint64_t kernel_batch(const shmb_path_t *path, const shmb_path_state_t *state,
                             const shmb_lookup_request_t *requests, size_t n)
{
    return shmb_lookup_batch(&state->table, (shmb_lookup_strategy_t)path->kernel, requests, n);
}

static uint64_t kernel_chain(const shmb_path_t *path, const shmb_path_state_t *state,
                             const shmb_lookup_request_t *requests, const uint64_t *expected, size_t n)
{
    return shmb_lookup_chain(&state->table, (shmb_lookup_strategy_t)path->kernel, requests, expected, n);
}

/* The last kernel torn down frees the table. */
static void kernel_teardown(const shmb_path_t *path, shmb_path_state_t *state)
{
    (void)path;
    if (state->kernels > 0 && --state->kernels == 0)
        shmb_lookup_fini(&state->table);
}

/* The kernels differ only by the shmb_lookup_strategy_t their shared functions pass on. */
#define KERNEL(kernel) {kernel, kernel_setup, kernel_translate, kernel_batch, kernel_chain, kernel_teardown}

const shmb_path_t shmb_path_table[SHMB_PATHS] = {
    [SHMB_SYSTEM_MOONCAKE] = {-1, mooncake_setup, mooncake_translate, mooncake_batch, mooncake_chain,
                              mooncake_teardown},
    [SHMB_SYSTEM_FLOWIPC_CLASSIC] = {-1, classic_setup, classic_translate, classic_batch, classic_chain,
                                     classic_teardown},
    [SHMB_SYSTEM_FLOWIPC_JEMALLOC] = {-1, jemalloc_setup, jemalloc_translate, jemalloc_batch, jemalloc_chain,
                                      jemalloc_teardown},
    [SHMB_SYSTEMS + SHMB_LOOKUP_LINEAR] = KERNEL(SHMB_LOOKUP_LINEAR),
    [SHMB_SYSTEMS + SHMB_LOOKUP_LOWER_BOUND] = KERNEL(SHMB_LOOKUP_LOWER_BOUND),
    [SHMB_SYSTEMS + SHMB_LOOKUP_TREE] = KERNEL(SHMB_LOOKUP_TREE),
    [SHMB_SYSTEMS + SHMB_LOOKUP_ARITHMETIC] = KERNEL(SHMB_LOOKUP_ARITHMETIC),
};

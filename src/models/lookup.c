/* lookup: the table of a peer's segments and the four translation strategies
 * over it, one request, a batch or a dependent chain (shmbench/lookup.h). */
#include "shmbench/lookup.h"

#include "base/names_internal.h"

#include <bsd/sys/tree.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct tree_node {
    RB_ENTRY(tree_node) link;
    shmb_lookup_segment_t seg;
};

static int node_cmp(const struct tree_node *a, const struct tree_node *b)
{
    return (a->seg.peer_base > b->seg.peer_base) - (a->seg.peer_base < b->seg.peer_base);
}

RB_HEAD(segment_tree, tree_node);
RB_GENERATE_INTERNAL(segment_tree, tree_node, link, node_cmp, __attribute__((unused)) static)

struct shmb_lookup_tree {
    struct segment_tree root;
    struct tree_node **nodes; /* for freeing */
};

static const char *const strategy_names[SHMB_LOOKUP_STRATEGIES] = {
    "linear", "lower_bound", "tree", "arithmetic"};

const char *shmb_lookup_strategy_name(shmb_lookup_strategy_t s)
{
    return shmb_names_get(strategy_names, SHMB_LOOKUP_STRATEGIES, (int)s);
}

int shmb_lookup_parse_strategy(const char *name, shmb_lookup_strategy_t *out)
{
    const int s = shmb_names_find(strategy_names, SHMB_LOOKUP_STRATEGIES, name);
    return s < 0 ? s : (*out = (shmb_lookup_strategy_t)s, 0);
}

static int compare_base(const void *a, const void *b)
{
    uint64_t x = ((const shmb_lookup_segment_t *)a)->peer_base;
    uint64_t y = ((const shmb_lookup_segment_t *)b)->peer_base;
    return (x > y) - (x < y);
}

static void free_tree(struct shmb_lookup_tree *tree, size_t n)
{
    if (!tree)
        return;
    for (size_t i = 0; tree->nodes && i < n; i++)
        free(tree->nodes[i]);
    free(tree->nodes);
    free(tree);
}

static struct shmb_lookup_tree *build_tree(const shmb_lookup_segment_t *segments, size_t n)
{
    struct shmb_lookup_tree *tree = calloc(1, sizeof(*tree));
    if (!tree || !(tree->nodes = calloc(n, sizeof(*tree->nodes)))) {
        free(tree);
        return NULL;
    }
    RB_INIT(&tree->root);
    for (size_t i = 0; i < n; i++) {
        tree->nodes[i] = malloc(sizeof(struct tree_node));
        if (!tree->nodes[i]) {
            free_tree(tree, n);
            return NULL;
        }
        tree->nodes[i]->seg = segments[i];
        RB_INSERT(segment_tree, &tree->root, tree->nodes[i]);
    }
    return tree;
}

int shmb_lookup_init(shmb_lookup_table_t *table, const shmb_lookup_segment_t *segments, size_t n)
{
    if (n == 0 || n > UINT32_MAX || !segments)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (segments[i].size == 0 || segments[i].peer_base + segments[i].size < segments[i].peer_base)
            return -EINVAL;
    shmb_lookup_segment_t *entries = malloc(n * sizeof(*entries));
    shmb_lookup_segment_t *sorted = malloc(n * sizeof(*sorted));
    if (!entries || !sorted) {
        free(entries);
        free(sorted);
        return -ENOMEM;
    }
    memcpy(entries, segments, n * sizeof(*entries));
    memcpy(sorted, segments, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), compare_base);
    for (size_t i = 1; i < n; i++) {
        if (sorted[i - 1].peer_base + sorted[i - 1].size > sorted[i].peer_base) {
            free(entries);
            free(sorted);
            return -EINVAL;
        }
    }
    struct shmb_lookup_tree *tree = build_tree(segments, n);
    if (!tree) {
        free(entries);
        free(sorted);
        return -ENOMEM;
    }
    table->n = n;
    table->entries = entries;
    table->sorted = sorted;
    table->tree = tree;
    return 0;
}

void shmb_lookup_fini(shmb_lookup_table_t *table)
{
    free_tree(table->tree, table->n);
    free(table->entries);
    free(table->sorted);
    memset(table, 0, sizeof(*table));
}

/* Our address of [addr, addr + len) if seg holds all of it, else NULL. */
static inline void *inside(const shmb_lookup_segment_t *seg, uint64_t addr, uint64_t len)
{
    uint64_t off = addr - seg->peer_base;
    if (addr >= seg->peer_base && len <= seg->size && off <= seg->size - len)
        return seg->local_base + off;
    return NULL;
}

static inline void *translate_linear(const shmb_lookup_table_t *t, const shmb_lookup_request_t *r)
{
    for (size_t i = 0; i < t->n; i++) {
        void *p = inside(&t->entries[i], r->addr, r->len);
        if (p)
            return p;
    }
    return NULL;
}

/* The last segment whose base is <= addr: std::upper_bound, then one back. */
static inline void *translate_lower_bound(const shmb_lookup_table_t *t, const shmb_lookup_request_t *r)
{
    const shmb_lookup_segment_t *s = t->sorted;
    size_t lo = 0, count = t->n;
    while (count > 0) {
        size_t half = count / 2;
        if (s[lo + half].peer_base <= r->addr) {
            lo += half + 1;
            count -= half + 1;
        } else {
            count = half;
        }
    }
    return lo == 0 ? NULL : inside(&s[lo - 1], r->addr, r->len);
}

/* std::map::lower_bound(addr), then one back unless it hit addr exactly. */
static inline void *translate_tree(const shmb_lookup_table_t *t, const shmb_lookup_request_t *r)
{
    struct segment_tree *root = &t->tree->root;
    struct tree_node key;
    key.seg.peer_base = r->addr;
    struct tree_node *n = RB_NFIND(segment_tree, root, &key);
    if (!n)
        n = RB_MAX(segment_tree, root);
    else if (n->seg.peer_base != r->addr)
        n = RB_PREV(segment_tree, root, n);
    return n ? inside(&n->seg, r->addr, r->len) : NULL;
}

static inline void *translate_arithmetic(const shmb_lookup_table_t *t, const shmb_lookup_request_t *r)
{
    if (r->id >= t->n)
        return NULL;
    const shmb_lookup_segment_t *seg = &t->entries[r->id];
    if (r->len > seg->size || r->offset > seg->size - r->len)
        return NULL;
    return seg->local_base + r->offset;
}

void *shmb_lookup_translate(const shmb_lookup_table_t *table, shmb_lookup_strategy_t s,
                            const shmb_lookup_request_t *req)
{
    switch (s) {
    case SHMB_LOOKUP_LINEAR: return translate_linear(table, req);
    case SHMB_LOOKUP_LOWER_BOUND: return translate_lower_bound(table, req);
    case SHMB_LOOKUP_TREE: return translate_tree(table, req);
    case SHMB_LOOKUP_ARITHMETIC: return translate_arithmetic(table, req);
    default: return NULL;
    }
}

/* One loop per strategy, so that each inlines its translation and the timed
 * code is only requests in, addresses summed. */
#define BATCH_LOOP(translate)                                                  \
    for (size_t i = 0; i < n; i++)                                             \
        sum += (uint64_t)(uintptr_t)translate(table, &requests[i]);

uint64_t shmb_lookup_batch(const shmb_lookup_table_t *table, shmb_lookup_strategy_t s,
                           const shmb_lookup_request_t *requests, size_t n)
{
    uint64_t sum = 0;
    switch (s) {
    case SHMB_LOOKUP_LINEAR: BATCH_LOOP(translate_linear) break;
    case SHMB_LOOKUP_LOWER_BOUND: BATCH_LOOP(translate_lower_bound) break;
    case SHMB_LOOKUP_TREE: BATCH_LOOP(translate_tree) break;
    case SHMB_LOOKUP_ARITHMETIC: BATCH_LOOP(translate_arithmetic) break;
    default: break;
    }
    return sum;
}

/* The chain: request i's keys shifted by delta, the distance of translation
 * i - 1 from where it should land (0 unless it is wrong). */
#define CHAIN_LOOP(translate)                                                  \
    for (size_t i = 0; i < n; i++) {                                           \
        shmb_lookup_request_t r = requests[i];                                 \
        r.addr += delta;                                                       \
        r.id += (uint32_t)delta;                                               \
        r.offset += delta;                                                     \
        uint64_t p = (uint64_t)(uintptr_t)translate(table, &r);                \
        delta = p - expected[i];                                               \
        sum += p;                                                              \
    }

uint64_t shmb_lookup_chain(const shmb_lookup_table_t *table, shmb_lookup_strategy_t s,
                           const shmb_lookup_request_t *requests, const uint64_t *expected,
                           size_t n)
{
    uint64_t sum = 0, delta = 0;
    switch (s) {
    case SHMB_LOOKUP_LINEAR: CHAIN_LOOP(translate_linear) break;
    case SHMB_LOOKUP_LOWER_BOUND: CHAIN_LOOP(translate_lower_bound) break;
    case SHMB_LOOKUP_TREE: CHAIN_LOOP(translate_tree) break;
    case SHMB_LOOKUP_ARITHMETIC: CHAIN_LOOP(translate_arithmetic) break;
    default: break;
    }
    return sum;
}

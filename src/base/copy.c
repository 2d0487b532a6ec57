/* copy: the kernels that move bytes through SHM and their verification
 * (shmbench/copy.h); the crew that splits one copy is in copy_crew.c.
 * Built with -fno-tree-loop-distribute-patterns (gcc) or -fno-builtin-memcpy
 * (clang) as well, so that no copy loop of this file becomes a memcpy call. */
#include "shmbench/copy.h"

#include "names_internal.h"

#include "shmbench/clock.h"

#include <errno.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static const char *const method_names[SHMB_COPY_METHODS] = {"memcpy", "loop", "nt", "movsb"};

const char *shmb_copy_method_name(shmb_copy_method_t m)
{
    return shmb_names_get(method_names, SHMB_COPY_METHODS, (int)m);
}

int shmb_copy_parse_method(const char *name, shmb_copy_method_t *out)
{
    const int m = shmb_names_find(method_names, SHMB_COPY_METHODS, name);
    return m < 0 ? m : (*out = (shmb_copy_method_t)m, 0);
}

static void copy_memcpy(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

/* An 8-byte word at any address (gcc and clang honour the lower alignment). */
typedef uint64_t __attribute__((aligned(1), may_alias)) unaligned_u64;

/* Each word (and each byte of the tail) passes through a general-purpose
 * register: the empty asm tells gcc and clang that it may change there, so
 * neither can merge them into wider or vector moves (-O3 makes the word loop
 * a 16-byte SSE2 loop on x86-64 otherwise) nor turn the loop into a memcpy
 * call. It stays what it says: 8-byte loads and stores, then single bytes. */
void shmb_copy_loop(void *dst, const void *src, size_t n)
{
    unaligned_u64 *d = dst;
    const unaligned_u64 *s = src;
    size_t words = n / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w = s[i];
        __asm__("" : "+r"(w));
        d[i] = w;
    }
    unsigned char *db = (unsigned char *)dst + words * 8;
    const unsigned char *sb = (const unsigned char *)src + words * 8;
    for (size_t i = 0; i < n % 8; i++) {
        unsigned char b = sb[i];
        __asm__("" : "+r"(b));
        db[i] = b;
    }
}

#if defined(__x86_64__)
/* Copies the bytes before the first `align`-aligned destination address,
 * returning how many. */
static size_t head_bytes(void *dst, const void *src, size_t n, size_t align)
{
    size_t head = (align - ((uintptr_t)dst & (align - 1))) & (align - 1);
    if (head > n)
        head = n;
    memcpy(dst, src, head);
    return head;
}

__attribute__((target("avx512f"))) static void copy_nt_avx512(void *dst, const void *src, size_t n)
{
    size_t h = head_bytes(dst, src, n, 64);
    unsigned char *d = (unsigned char *)dst + h;
    const unsigned char *s = (const unsigned char *)src + h;
    n -= h;
    for (; n >= 256; n -= 256, d += 256, s += 256) {
        __m512i a = _mm512_loadu_si512((const void *)s);
        __m512i b = _mm512_loadu_si512((const void *)(s + 64));
        __m512i c = _mm512_loadu_si512((const void *)(s + 128));
        __m512i e = _mm512_loadu_si512((const void *)(s + 192));
        _mm512_stream_si512((void *)d, a);
        _mm512_stream_si512((void *)(d + 64), b);
        _mm512_stream_si512((void *)(d + 128), c);
        _mm512_stream_si512((void *)(d + 192), e);
    }
    for (; n >= 64; n -= 64, d += 64, s += 64)
        _mm512_stream_si512((void *)d, _mm512_loadu_si512((const void *)s));
    _mm_sfence();
    memcpy(d, s, n);
}

__attribute__((target("avx2"))) static void copy_nt_avx2(void *dst, const void *src, size_t n)
{
    size_t h = head_bytes(dst, src, n, 32);
    unsigned char *d = (unsigned char *)dst + h;
    const unsigned char *s = (const unsigned char *)src + h;
    n -= h;
    for (; n >= 128; n -= 128, d += 128, s += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)s);
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + 64));
        __m256i e = _mm256_loadu_si256((const __m256i *)(s + 96));
        _mm256_stream_si256((__m256i *)d, a);
        _mm256_stream_si256((__m256i *)(d + 32), b);
        _mm256_stream_si256((__m256i *)(d + 64), c);
        _mm256_stream_si256((__m256i *)(d + 96), e);
    }
    for (; n >= 32; n -= 32, d += 32, s += 32)
        _mm256_stream_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
    _mm_sfence();
    memcpy(d, s, n);
}

static void copy_nt_sse2(void *dst, const void *src, size_t n)
{
    size_t h = head_bytes(dst, src, n, 16);
    unsigned char *d = (unsigned char *)dst + h;
    const unsigned char *s = (const unsigned char *)src + h;
    n -= h;
    for (; n >= 16; n -= 16, d += 16, s += 16)
        _mm_stream_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)s));
    _mm_sfence();
    memcpy(d, s, n);
}

static void copy_movsb(void *dst, const void *src, size_t n)
{
    __asm__ __volatile__("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}
#endif

shmb_copy_fn shmb_copy_kernel(shmb_copy_method_t m)
{
    switch (m) {
    case SHMB_COPY_MEMCPY: return copy_memcpy;
    case SHMB_COPY_LOOP: return shmb_copy_loop;
#if defined(__x86_64__)
    case SHMB_COPY_NT:
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f"))
            return copy_nt_avx512;
        if (__builtin_cpu_supports("avx2"))
            return copy_nt_avx2;
        return copy_nt_sse2;
    case SHMB_COPY_MOVSB: return copy_movsb;
#endif
    default: return NULL;
    }
}

const char *shmb_copy_kernel_variant(shmb_copy_method_t m)
{
#if defined(__x86_64__)
    shmb_copy_fn fn = shmb_copy_kernel(m);
    if (fn == copy_nt_avx512)
        return "avx512";
    if (fn == copy_nt_avx2)
        return "avx2";
    if (fn == copy_nt_sse2)
        return "sse2";
#else
    (void)m;
#endif
    return "";
}

/* The pattern's 8-byte word at word index w. */
static inline uint64_t pattern_word(uint64_t w)
{
    uint64_t z = (w + 1) * 0x9e3779b97f4a7c15ull;
    return z ^ (z >> 29);
}

void shmb_copy_fill_pattern(void *buf, size_t len)
{
    unsigned char *b = buf;
    size_t words = len / 8;
    for (size_t w = 0; w < words; w++) {
        uint64_t v = pattern_word(w);
        memcpy(b + w * 8, &v, 8);
    }
    uint64_t last = pattern_word(words);
    memcpy(b + words * 8, &last, len % 8);
}

int shmb_copy_verify_from(const void *buf, size_t len, size_t from, size_t *first_bad)
{
    const unsigned char *b = buf;
    for (size_t off = 0; off < len;) {
        const uint64_t want = pattern_word((from + off) / 8);
        const size_t in = (from + off) % 8, k = len - off < 8 - in ? len - off : 8 - in;
        const unsigned char *w = (const unsigned char *)&want + in;
        if (memcmp(b + off, w, k) != 0)
            for (size_t i = 0; i < k; i++)
                if (b[off + i] != w[i]) {
                    *first_bad = off + i;
                    return 1;
                }
        off += k;
    }
    return 0;
}

int shmb_copy_verify(const void *buf, size_t len, size_t *first_bad)
{
    return shmb_copy_verify_from(buf, len, 0, first_bad);
}

// What a store that skips the write-allocate read would save on a memory-bound kernel: the held-out
// program vertical10 (`tnew = t + c (dif - adv)`, `dif` and `adv` inlined, reading t at k-1, k,
// k+1 and w) at 256x256x60 on two threads, each sweeping the planes of one half of y, as
// Adams2019 schedules it. The same loop, with its results stored by ordinary 64-byte stores and
// by non-temporal ones (`_mm512_stream_pd`), in rounds, each run after reading 340 MB as
// benches/halide_peer.py flushes. Arrays on 2 MiB huge pages, staggered as the harness staggers
// them. Needs AVX-512:
//   g++ -O3 -march=native -fopenmp benches/nontemporal_store.cpp -o /tmp/nt && OMP_NUM_THREADS=2 /tmp/nt
#include <immintrin.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr long NX = 256, NY = 256, NZ = 60, SY = NX, SZ = NX * NY;

double* allocate(size_t values, size_t offset)
{
    void* p = nullptr;
    if (posix_memalign(&p, 2 << 20, values * 8 + 8192) != 0) {
        std::perror("posix_memalign");
        std::exit(1);
    }
    madvise(p, values * 8 + 8192, MADV_HUGEPAGE);
    double* d = (double*)((char*)p + offset);
    for (size_t i = 0; i < values; ++i) d[i] = 1.0 + double(i % 7) * 0.1 - (i % 3 == 0 ? 1.2 : 0.0);
    return d;
}

template <bool stream>
void kernel(const double* t, const double* w, double* out)
{
    #pragma omp parallel for schedule(static)
    for (long half = 0; half < 2; ++half)
        for (long k = 1; k <= NZ; ++k)
            for (long j = half * NY / 2; j < (half + 1) * NY / 2; ++j) {
                const double* tc = t + j * SY + k * SZ;
                const double* wc = w + j * SY + k * SZ;
                double* oc = out + j * SY + k * SZ;
                for (long i = 0; i < NX; i += 8) {
                    const __m512d tk = _mm512_loadu_pd(tc + i);
                    const __m512d tp = _mm512_loadu_pd(tc + i + SZ);
                    const __m512d tm = _mm512_loadu_pd(tc + i - SZ);
                    const __m512d wk = _mm512_loadu_pd(wc + i);
                    const __m512d dif = _mm512_mul_pd(_mm512_set1_pd(0.1125),
                        _mm512_add_pd(_mm512_sub_pd(tp, _mm512_mul_pd(_mm512_set1_pd(2.0), tk)), tm));
                    const __mmask8 up = _mm512_cmp_pd_mask(wk, _mm512_setzero_pd(), _CMP_GT_OQ);
                    const __m512d adv = _mm512_mask_blend_pd(up, _mm512_mul_pd(wk, _mm512_sub_pd(tp, tk)),
                        _mm512_mul_pd(wk, _mm512_sub_pd(tk, tm)));
                    const __m512d r = _mm512_add_pd(tk, _mm512_mul_pd(_mm512_set1_pd(0.1098), _mm512_sub_pd(dif, adv)));
                    if (stream) _mm512_stream_pd(oc + i, r);
                    else _mm512_storeu_pd(oc + i, r);
                }
            }
    if (stream) _mm_sfence();
}

}  // namespace

int main()
{
    const size_t values = SZ * (NZ + 2);
    double* t = allocate(values, 0);
    double* w = allocate(values, 1344);
    double* out = allocate(values, 2688);
    std::vector<char> flush(340u << 20, 1);
    volatile long sink = 0;
    for (int round = 0; round < 3; ++round)
        for (int stream = 0; stream < 2; ++stream) {
            std::vector<double> times;
            for (int run = 0; run < 32; ++run) {
                long s = 0;
                for (size_t i = 0; i < flush.size(); i += 64) s += flush[i];
                sink = sink + s;
                const double t0 = omp_get_wtime();
                if (stream) kernel<true>(t, w, out); else kernel<false>(t, w, out);
                times.push_back(omp_get_wtime() - t0);
            }
            std::sort(times.begin(), times.end());
            std::printf("round %d, %s stores: median %.3f ms\n", round,
                stream ? "non-temporal" : "ordinary", times[times.size() / 2] * 1e3);
        }
    return 0;
}

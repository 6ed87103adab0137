// What a division, a square root and `exp` cost against an add, in the kind of loop absinthe
// generates: a vectorised row loop (`#pragma omp simd`) over L2-resident planes (64x64x2 doubles
// per array, 2 OpenMP threads), built with the flags of the timed kernels. Each variant adds one
// operation of a kind to `p*q + r*s`; its extra time, divided by the extra time per op of a
// variant with 14 more adds and multiplies, is its weight in adds (`expr::DIVIDE_OPERATION`,
// `SQRT_OPERATION`, `CALL_OPERATION`). "first" is one such operation per cell, "second" a
// second one (throughput-bound).
//
//   g++ -O3 -march=native -fopenmp -fno-fast-math -fno-trapping-math -fno-math-errno \
//       -ffp-contract=fast benches/operation_weights.cpp -o ow && OMP_NUM_THREADS=2 ./ow
#include <cmath>
#include <cstdio>
#include <omp.h>
#include <vector>
#include <algorithm>
#include <chrono>
const long NX=64, NY=64, NZ=2, N=NX*NY*NZ;
template<int K> void kern(const double* __restrict a, const double* __restrict b, const double* __restrict c, const double* __restrict d, double* __restrict o){
  #pragma omp parallel for schedule(static)
  for(long k=0;k<NZ;++k) for(long j=0;j<NY;++j){
    #pragma omp simd
    for(long i=0;i<NX;++i){ long x=i+j*NX+k*NX*NY;
      double v=0, p=a[x], q=b[x], r=c[x], s=d[x];
      if(K==0) v=p*q+r*s;                                  // 3 ops
      if(K==1) v=((p*q+r*s)*(p-q)+(r+s)*(p*s-q*r))*(p+s)+(q-r)*(p*r-q*s); // 3+14 ops
      if(K==2) v=p/q+r*s;
      if(K==3) v=p/q+r/s;
      if(K==4) v=std::sqrt(p)+r*s;
      if(K==5) v=std::sqrt(p)+std::sqrt(r)*s;
      if(K==6) v=std::exp(p)+r*s;
      if(K==7) v=std::exp(p)+std::exp(r)*s;
      o[x]=v; }}
}
template<int K> double t(std::vector<double>*v){
  std::vector<double> ts;
  for(int r=0;r<4001;++r){auto s=std::chrono::steady_clock::now(); kern<K>(v[0].data(),v[1].data(),v[2].data(),v[3].data(),v[4].data()); auto e=std::chrono::steady_clock::now(); if(r) ts.push_back(std::chrono::duration<double>(e-s).count());}
  std::sort(ts.begin(),ts.end()); return ts[ts.size()/2];
}
int main(){ std::vector<double> v[5]; for(auto&x:v) x.assign(N,1.0);
 for(long x=0;x<N;++x){v[0][x]=1+0.001*(x%97);v[1][x]=2+0.001*(x%89);v[2][x]=0.5+0.001*(x%83);v[3][x]=3+0.001*(x%79);}
 for(int rep=0;rep<3;++rep){
  double b=t<0>(v),o=t<1>(v),d1=t<2>(v),d2=t<3>(v),s1=t<4>(v),s2=t<5>(v),e1=t<6>(v),e2=t<7>(v);
  double op=(o-b)/14; // per op
  printf("per op %.3f ns/cell; div %.1f %.1f  sqrt %.1f %.1f  exp %.1f %.1f (ops: first, second)\n",op*1e9/N,(d1-b)/op+1,(d2-d1)/op+1,(s1-b)/op,(s2-s1)/op,(e1-b)/op,(e2-e1)/op);
 }
}

// SPDX-License-Identifier: MIT
// The peak and bandwidth probes respect the thread cap (ATTN_MAX_THREADS, attn.h): a
// thread count above it — given, or the OpenMP default from OMP_NUM_THREADS — is
// refused without entering a parallel region (libgomp crashes creating 100000 threads).
// Run by CTest twice: plainly, and with OMP_NUM_THREADS=100000 (--omp-env).
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "bandwidth.h"
#include "peak.h"
#include "test_util.h"

int main(int argc, char **argv) {
  const bool omp_env = argc > 1 && strcmp(argv[1], "--omp-env") == 0;
  char err[256] = "";
  attn_bandwidth bw;

  // Explicit counts above the cap: refused, whatever OMP_NUM_THREADS says.
  EXPECT(attn_peak_threads(ATTN_MAX_THREADS + 1, err, sizeof err) == 0 && strstr(err, "1025"),
         "threads = cap + 1 is refused with the count in the message (%s)", err);
  EXPECT(attn_peak_fma_gflops(0, ATTN_MAX_THREADS + 1) == 0.0, "peak at cap + 1 threads is 0");
  EXPECT(attn_bandwidth_read((size_t)1 << 20, 100000, 1, &bw) == -2,
         "bandwidth at 100000 threads is refused (-2)");
  // Within the cap: measured.
  EXPECT(attn_peak_threads(1, NULL, 0) == 1, "one thread is one thread");
  EXPECT(attn_peak_fma_gflops(0, 1) > 0.0, "the scalar peak on one thread is measured");
  EXPECT(attn_bandwidth_read((size_t)1 << 20, 1, 1, &bw) == 0 && bw.ok && bw.threads == 1,
         "bandwidth on one thread is measured");

  if (omp_env) {
    // OMP_NUM_THREADS=100000: the default (threads 0) is above the cap.
    EXPECT(omp_get_max_threads() > ATTN_MAX_THREADS, "run with OMP_NUM_THREADS above the cap (%d)",
           omp_get_max_threads());
    err[0] = '\0';
    EXPECT(attn_peak_threads(0, err, sizeof err) == 0 && strstr(err, "OMP_NUM_THREADS") &&
               strstr(err, "1024"),
           "the OpenMP default above the cap is refused, naming OMP_NUM_THREADS and the cap (%s)",
           err);
    EXPECT(attn_peak_fma_gflops(0, 0) == 0.0, "peak at the default is 0, not a crash");
    EXPECT(attn_bandwidth_read((size_t)1 << 20, 0, 1, &bw) == -2,
           "bandwidth at the default is refused (-2), not a crash");
  } else {
    EXPECT(attn_peak_threads(0, err, sizeof err) == omp_get_max_threads(),
           "threads 0 means the OpenMP default (%s)", err);
  }
  return test_finish(omp_env ? "test_peak_cap --omp-env" : "test_peak_cap");
}

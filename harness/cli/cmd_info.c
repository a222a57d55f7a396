// SPDX-License-Identifier: MIT
// `attnbench info` — what this machine is, for reading benchmark numbers:
//   CPU model, logical CPUs / OpenMP threads, SIMD ISAs detected (and compiled in), the
//   SIMD-related CPU flags, and
//   the measured FP32 FMA peak in GFLOP/s per available ISA for 1 thread and for all
//   threads, then the low-precision units' peaks (BF16/INT8 dot products, FP16, AMX;
//   harness/machine/peak/peak.h). `--no-peak` skips the ~2–4 s measurement.
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "attn.h"
#include "bench/adjacent.h"  // the probe --bandwidth-probe-server serves
#include "bench/context.h"   // attn_bench_physical_cores
#include "cli/commands.h"
#include "cli/info_parallel.h"  // cores, binding, tiles, read bandwidth
#include "common/cli_args.h"
#include "machine/cpu_ident.h"
#include "machine/placement.h"
#include "machine/topology.h"
#include "peak.h"
#include "resolve/resolve.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

// CPU model: the x86 cpuid brand string, else /proc/cpuinfo ("model name", or on
// aarch64 the implementer/part numbers), else "unknown".
static void cpu_model(char *buf, size_t len) {
  snprintf(buf, len, "unknown");
#if defined(__x86_64__) || defined(__i386__)
  unsigned r[12];
  if (__get_cpuid_max(0x80000000u, NULL) >= 0x80000004u) {
    for (unsigned i = 0; i < 3; i++)
      __get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
    char brand[49];
    memcpy(brand, r, 48);
    brand[48] = '\0';
    const char *s = brand;
    while (*s == ' ') s++;
    size_t n = strlen(s);
    while (n && s[n - 1] == ' ') n--;
    if (n) {
      snprintf(buf, len, "%.*s", (int)n, s);
      return;
    }
  }
#endif
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512], impl[64] = "", part[64] = "";
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (!colon) continue;
    char *val = colon + 1;
    while (*val == ' ' || *val == '\t') val++;
    val[strcspn(val, "\n")] = '\0';
    if (strncmp(line, "model name", 10) == 0 && *val) {
      snprintf(buf, len, "%s", val);
      fclose(f);
      return;
    }
    if (strncmp(line, "CPU implementer", 15) == 0 && !impl[0])
      snprintf(impl, sizeof impl, "%s", val);
    if (strncmp(line, "CPU part", 8) == 0 && !part[0]) snprintf(part, sizeof part, "%s", val);
  }
  fclose(f);
  if (impl[0]) snprintf(buf, len, "implementer %s part %s", impl, part);
}

// The SIMD-related CPU flags the kernel reports (/proc/cpuinfo "flags" on x86,
// "Features" on aarch64), for context: e.g. "fma avx2 avx512f avx512bw avx512vl
// avx512_bf16". Empty if unavailable.
static void cpu_flags(char *buf, size_t len) {
  static const char *const kInteresting[] = {
      "sse4_2",   "fma",         "avx2",        "avx512f",     "avx512dq", "avx512bw",
      "avx512vl", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_tile", "asimd",
      "asimdhp",  "asimddp",     "sve",         "sve2",        "bf16",     "i8mm"};
  buf[0] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[4096];
  size_t used = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5) != 0 && strncmp(line, "Features", 8) != 0) continue;
    const char *colon = strchr(line, ':');
    if (!colon) break;
    for (size_t i = 0; i < sizeof kInteresting / sizeof kInteresting[0]; i++) {
      // whole-word match inside the space-separated list
      const size_t n = strlen(kInteresting[i]);
      for (const char *t = colon + 1; (t = strstr(t, kInteresting[i])) != NULL; t += n) {
        if ((t[-1] == ' ' || t[-1] == '\t') && (t[n] == ' ' || t[n] == '\n' || t[n] == '\0')) {
          const int w = snprintf(buf + used, len - used, "%s%s", used ? " " : "", kInteresting[i]);
          if (w > 0 && (size_t)w < len - used) used += (size_t)w;
          break;
        }
      }
    }
    break;  // the first CPU's line is enough
  }
  fclose(f);
}

// ISAs compiled into this build (kernels and peak loops exist for them).
static uint32_t compiled_isas(void) {
#if defined(__x86_64__) || defined(__i386__)
  return ATTN_ISA_AVX2 | ATTN_ISA_AVX512F;
#elif defined(__aarch64__)
  return ATTN_ISA_NEON;
#else
  return 0;
#endif
}

// --bandwidth-probe-server N: bench's adjacent read-bandwidth probe (bench/adjacent.h: the
// same buffer rule, best of 2 passes, N threads bound as bench binds them) for a process
// that times something else — scripts/bench-baselines probes right before and right after
// each memory-bound baseline point, as bench does around its kernels' points. Prints
// "ready" once the buffer is filled, then one GB/s figure per line read from stdin, until
// end of input ("unavailable" and exit 1 if the buffer cannot be had).
static int serve_bandwidth_probe(int threads) {
  char binding[512];
  attn_placement_bind(threads, binding, sizeof binding);
  if (attn_bench_adjacent_bandwidth(threads, 1) <= 0) {
    printf("unavailable\n");
    fflush(stdout);
    return ATTNBENCH_EXIT_FAILURE;
  }
  printf("ready\n");
  fflush(stdout);
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    printf("%.3f\n", attn_bench_adjacent_bandwidth(threads, 2));
    if (fflush(stdout) != 0) break;
  }
  attn_bench_release_adjacent_probe();
  return ATTNBENCH_EXIT_OK;
}

// After an all-threads peak that stayed below 80 % of threads × its 1-thread figure
// (attn_peak_gops_scaled): the cores were not all ours while it was measured.
static const char kBusyNote[] = "  below threads x 1 thread: the machine was busy";

// The table "compute unit peaks, measured": every low-precision probe of this build, in
// G ops/s (multiply + add per product, as FLOPs), or "not on this CPU" (with the reason
// when the CPU has the unit but the OS withholds it, e.g. AMX tile data).
static void print_unit_peaks(uint32_t isa, int threads, int cores) {
  size_t n;
  const attn_peak_probe *probes = attn_peak_probes(&n);
  const char *note = attn_cpu_features_note();
  printf("compute unit peaks, measured (G ops/s; a product's multiply and add count 2):\n");
  printf("  %-8s  %-20s  %12s  %12s\n", "unit", "instruction", "1 thread", "all threads");
  for (size_t i = 0; i < n; i++) {
    const attn_peak_probe *pr = &probes[i];
    if (pr->unit == ATTN_PEAK_FP32_FMA) continue;  // the table above
    const char *unit = attn_peak_unit_name(pr->unit);
    if ((isa & pr->isa) != pr->isa) {
      char bit[32];
      attn_isa_names(pr->isa, bit, sizeof bit);
      const bool why = note[0] && strncmp(note, bit, strlen(bit)) == 0;
      printf("  %-8s  %-20s  not on this CPU (%s)%s%s\n", unit, pr->instruction, bit,
             why ? ": " : "", why ? note : "");
      continue;
    }
    const double one = attn_peak_gops(pr->unit, pr->isa, 1);
    int busy;
    const double all = attn_peak_gops_scaled(pr->unit, pr->isa, threads, one, cores, &busy);
    printf("  %-8s  %-20s  %12.1f  %12.1f (%d)%s\n", unit, pr->instruction, one, all, threads,
           busy ? kBusyNote : "");
  }
}

int cmd_info(int argc, char **argv) {
  bool no_peak = false;
  int serve = 0;
  const cli_option opts[] = {
      {.name = "no-peak",
       .kind = CLI_FLAG,
       .dest = &no_peak,
       .help = "skip the peak measurements (take 2-4 s)"},
      {.name = "bandwidth-probe-server",
       .kind = CLI_INT,
       .dest = &serve,
       .metavar = "N",
       .min = 1,
       .max = ATTN_MAX_THREADS,
       .help = "instead of the report: bench's adjacent read-bandwidth probe with N threads, "
               "one GB/s line per line on stdin (after 'ready'; for scripts/bench-baselines)"},
  };
  const cli_spec spec = {
      .command = "info",
      .summary =
          "Print the CPU model, the SIMD ISAs found, and this machine's measured FP32\n"
          "FMA peak (GFLOP/s) per available ISA, then the peaks of the low-precision\n"
          "units (BF16 and INT8 dot products, FP16, AMX-BF16), for 1 thread and all\n"
          "threads: the yardsticks for '% of peak' figures. Peaks are measured\n"
          "(independent chains covering latency x ports), not computed from a spec sheet.",
      .epilog = "example:\n  attnbench info",
      CLI_OPTIONS(opts),
  };
  const cli_status st = cli_parse(&spec, argc, argv);
  if (st != CLI_OK) return cli_exit_code(st);
  if (attn_resolve_env_bad("info")) return ATTNBENCH_EXIT_USAGE;  // ATTNBENCH_TILE_* etc.
  if (serve > 0) return serve_bandwidth_probe(serve);

  char model[128], found[160], compiled[160];  // every ATTN_ISA_* name fits
  cpu_model(model, sizeof model);
  const uint32_t isa = attn_cpu_features();
  const int threads = omp_get_max_threads();
  // Up to the physical cores a unit's peak should scale with the threads (attn_peak_gops_scaled).
  const int cores = attn_bench_physical_cores();
  printf("cpu:        %s\n", model);
  const attn_cpu_ident *id = attn_cpu_ident_get();
  char ident[96];
  attn_cpu_ident_format(id, ident, sizeof ident);
  printf("cpu id:     %s -> %s%s\n", ident, id->uarch,
         id->hypervisor ? " (under a hypervisor)" : "");
  if (id->note[0]) printf("            note: %s\n", id->note);
  printf("threads:    %d (OpenMP default; OMP_NUM_THREADS overrides)\n", threads);
  printf("isa found:  %s\n", attn_isa_names(isa, found, sizeof found));
  if (attn_cpu_features_note()[0])
    printf("            not offered: %s\n", attn_cpu_features_note());
  const uint32_t hidden = attn_cpu_units_not_exposed();
  if (hidden) {
    char names[160];
    printf(
        "            not exposed: %s (%s has them; this hypervisor's cpuid does not offer "
        "them, so no kernel uses them)\n",
        attn_isa_names(hidden, names, sizeof names), id->uarch);
  }
  printf("compiled:   %s\n", attn_isa_names(compiled_isas(), compiled, sizeof compiled));
  char flags[256];
  cpu_flags(flags, sizeof flags);
  if (flags[0]) printf("cpu flags:  %s\n", flags);
  attn_topology_print(attn_topology_get(), stdout);  // hwloc summary (topology.c)
  if (no_peak) {
    attn_info_parallel(stdout, false);  // parallel section, without the bandwidth probe
    return fflush(stdout) == 0 ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
  }

  // The probes run on the OpenMP default's thread count: above the thread cap (attn.h)
  // refuse with the reason instead of letting libgomp crash on 100000 threads.
  char cap_err[256];
  if (attn_peak_threads(0, cap_err, sizeof cap_err) == 0) {
    fflush(stdout);
    fprintf(stderr, "attnbench info: cannot measure the FMA peak: %s (--no-peak skips it)\n",
            cap_err);
    return ATTNBENCH_EXIT_FAILURE;
  }
  printf("FP32 FMA peak, measured (GFLOP/s):\n");
  printf("  %-8s  %12s  %12s\n", "isa", "1 thread", "all threads");
  static const struct {
    uint32_t bit;
    const char *name;
  } rows[] = {{0, "scalar"},
              {ATTN_ISA_AVX2, "avx2"},
              {ATTN_ISA_AVX512F, "avx512f"},
              {ATTN_ISA_NEON, "neon"}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (rows[i].bit && !((isa & compiled_isas()) & rows[i].bit)) continue;
    const double one = attn_peak_fma_gflops(rows[i].bit, 1);
    int busy;
    const double all =
        attn_peak_gops_scaled(ATTN_PEAK_FP32_FMA, rows[i].bit, threads, one, cores, &busy);
    char all_label[16];
    snprintf(all_label, sizeof all_label, "(%d)", threads);
    printf("  %-8s  %12.1f  %12.1f %s%s\n", rows[i].name, one, all, all_label,
           busy ? kBusyNote : "");
  }
  print_unit_peaks(isa, threads, cores);
  attn_info_parallel(stdout, true);  // parallel section incl. the read-bandwidth probe
  return fflush(stdout) == 0 ? ATTNBENCH_EXIT_OK : ATTNBENCH_EXIT_FAILURE;
}

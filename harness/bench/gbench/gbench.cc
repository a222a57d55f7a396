// SPDX-License-Identifier: MIT
// gbench.cc — the C shim over Google Benchmark (interface and usage in gbench.h).
// The only C++ in attnbench; it translates calls and owns no benchmarking logic.
//
// Results: a JSONReporter writes into memory; after every ReportRuns the text so far plus
// the closing "]}" (exactly what JSONReporter::Finalize appends) — a complete JSON
// document holding every benchmark reported so far — is handed to the caller's save
// callback. Where and how it is stored (atomic replacement, locking, what to do when it
// cannot be saved) is the caller's policy (harness/cmd_bench.c, harness/fileio.h). A
// failed save stops the sweep: the benchmarks not yet run are skipped without running.
#include "bench/gbench/gbench.h"

#include <benchmark/benchmark.h>
#include <regex.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

benchmark::State &S(attn_gb_state *s) {
  return *reinterpret_cast<benchmark::State *>(s);
}
const benchmark::State &S(const attn_gb_state *s) {
  return *reinterpret_cast<const benchmark::State *>(s);
}

std::vector<std::string> &RegisteredNames() {
  static std::vector<std::string> names;
  return names;
}

// Set when the caller could not save the results: every benchmark still to come is
// skipped (no timing) and nothing more is reported.
bool g_stopped = false;

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context &) override {
    return true;
  }
  void ReportRuns(const std::vector<Run> &) override {}
};

// --benchmark_format=compact: one line per run with the columns people read — time, CPU
// time, iterations, GFLOP/s, GB/s, % of roofline (else % of peak) and % of the adjacent
// bandwidth — instead of the console reporter's every counter (46 columns, most of them
// shape constants or zero). Every counter stays in the results file.
class CompactReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context &) override {
    size_t w = 9;
    for (const std::string &n : RegisteredNames()) w = std::max(w, n.size() + 7);  // "_median"
    width_ = static_cast<int>(w);
    std::fprintf(stdout, "%-*s %13s %13s %10s %9s %9s %7s %7s\n", width_, "Benchmark", "Time",
                 "CPU", "Iterations", "GFLOP/s", "GB/s", "%roof", "%adj");
    std::fflush(stdout);
    return true;
  }

  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs) {
      const std::string name = r.benchmark_name();
      if (r.error_occurred) {
        std::fprintf(stdout, "%-*s ERROR: %s\n", width_, name.c_str(), r.error_message.c_str());
        continue;
      }
      char t[32], c[32];
      const bool pct =
          r.run_type == Run::RT_Aggregate && r.aggregate_unit == benchmark::kPercentage;
      if (pct) {
        std::snprintf(t, sizeof t, "%.2f %%", 100.0 * r.real_accumulated_time);
        std::snprintf(c, sizeof c, "%.2f %%", 100.0 * r.cpu_accumulated_time);
      } else {
        const char *unit = benchmark::GetTimeUnitString(r.time_unit);
        std::snprintf(t, sizeof t, "%.4g %s", r.GetAdjustedRealTime(), unit);
        std::snprintf(c, sizeof c, "%.4g %s", r.GetAdjustedCPUTime(), unit);
      }
      std::fprintf(
          stdout, "%-*s %13s %13s %10lld %9s %9s %7s %7s\n", width_, name.c_str(), t, c,
          static_cast<long long>(r.iterations), Counter(r, "GFLOP/s", "%.2f", pct).c_str(),
          Counter(r, "GB/s", "%.2f", pct).c_str(),
          Counter(r, r.counters.count("%roofline") ? "%roofline" : "%peak", "%.1f", pct).c_str(),
          Counter(r, "%adj_bw", "%.1f", pct).c_str());
    }
    std::fflush(stdout);
  }

 private:
  // A counter's value (on a cv row: the counter's cv, as a percentage), "-" if absent.
  static std::string Counter(const Run &r, const char *name, const char *fmt, bool pct) {
    const auto it = r.counters.find(name);
    if (it == r.counters.end()) return "-";
    char buf[32];
    if (pct)
      std::snprintf(buf, sizeof buf, "%.2f %%", 100.0 * it->second.value);
    else
      std::snprintf(buf, sizeof buf, fmt, it->second.value);
    return buf;
  }

  int width_ = 40;
};

// Forwards to the display reporter, keeps the JSON document in memory and rewrites the
// results file after each report, and calls the progress callback once per benchmark.
class TeeReporter : public benchmark::BenchmarkReporter {
 public:
  TeeReporter(benchmark::BenchmarkReporter *display, const attn_gb_run_opts &opts, size_t total)
      : display_(display), opts_(opts), total_(total) {
    json_.SetOutputStream(&buffer_);
    json_.SetErrorStream(&std::cerr);
  }

  bool ReportContext(const Context &context) override {
    const bool ok = display_->ReportContext(context);
    json_.ReportContext(context);
    Flush();
    return ok;
  }

  void ReportRuns(const std::vector<Run> &reported) override {
    if (reported.empty() || g_stopped) return;
    std::vector<Run> runs = reported;
    for (Run &r : runs) {
      // The cv of a counter that is 0 in every repetition (e.g. causal = 0) is 0/0; it
      // has no spread, so report 0 — a NaN would make the JSON unreadable to strict
      // parsers.
      if (r.run_type != Run::RT_Aggregate || r.aggregate_unit != benchmark::kPercentage) continue;
      for (auto &kv : r.counters)
        if (std::isnan(kv.second.value)) kv.second.value = 0.0;
    }
    if (opts_.plain_names) {
      for (Run &r : runs) {
        r.run_name.min_time.clear();
        r.run_name.min_warmup_time.clear();
        r.run_name.repetitions.clear();
        r.run_name.time_type.clear();
      }
    }
    const Run &first = runs[0];
    const bool aggregates = first.run_type == Run::RT_Aggregate;
    if (!opts_.display_aggregates_only || aggregates || first.repetitions <= 1 ||
        first.error_occurred)
      display_->ReportRuns(runs);
    json_.ReportRuns(runs);
    Flush();
    if (!ok_) return;  // not saved: not reported as finished
    // A benchmark is finished when its aggregates arrive, or with its runs when there
    // will be no aggregates (one repetition, or an error).
    if (!(aggregates || first.error_occurred || first.repetitions <= 1)) return;
    const std::string name = first.run_name.str();
    if (!done_.insert(name).second || !opts_.progress) return;
    const Run *median = &first;
    double cv = -1;
    for (const Run &r : runs) {
      if (r.run_type != Run::RT_Aggregate) continue;
      if (r.aggregate_name == "median") median = &r;
      // percentage aggregates hold the ratio itself in the time fields
      if (r.aggregate_name == "cv") cv = r.real_accumulated_time;
    }
    std::vector<std::string> names;
    std::vector<const char *> cnames;
    std::vector<double> values;
    for (const auto &kv : median->counters) {
      names.push_back(kv.first);
      values.push_back(kv.second.value);
    }
    for (const std::string &n : names) cnames.push_back(n.c_str());
    attn_gb_result res = {};
    res.name = name.c_str();
    res.label = median->report_label.c_str();
    res.error = first.error_occurred;
    res.error_message = first.error_message.c_str();
    res.seconds = median->iterations > 0
                      ? median->real_accumulated_time / static_cast<double>(median->iterations)
                      : 0.0;
    res.cv = cv;
    res.repetitions = first.repetitions;
    res.counter_count = values.size();
    res.counter_names = cnames.data();
    res.counter_values = values.data();
    opts_.progress(opts_.progress_user, &res, done_.size(), total_);
  }

  void Finalize() override {
    display_->Finalize();
    if (!g_stopped) Flush();
  }

  bool ok() const {
    return ok_;
  }

 private:
  void Flush() {
    if (!opts_.save_json || !ok_) return;
    std::string text = buffer_.str();
    // Identical to JSONReporter::Finalize's closing of the benchmarks list and document.
    text += "\n  ]\n}\n";
    ok_ = opts_.save_json(opts_.save_user, text.data(), text.size());
    if (!ok_) g_stopped = true;
  }

  benchmark::BenchmarkReporter *display_;
  attn_gb_run_opts opts_;
  size_t total_;
  benchmark::JSONReporter json_;
  std::ostringstream buffer_;
  std::set<std::string> done_;
  bool ok_ = true;
};

// How many registered benchmarks --benchmark_filter selects (same rules as the library:
// "" or "all" is everything, a leading '-' negates).
size_t CountSelected() {
  std::string filter = benchmark::GetBenchmarkFilter();
  bool negate = false;
  if (filter.empty() || filter == "all") filter = ".";
  if (filter[0] == '-') {
    negate = true;
    filter = filter.substr(1);
  }
  // POSIX extended regular expressions, as Google Benchmark uses when built without
  // std::regex; for the patterns people pass to a filter the two agree.
  regex_t re;
  if (regcomp(&re, filter.c_str(), REG_EXTENDED | REG_NOSUB) != 0) return RegisteredNames().size();
  size_t n = 0;
  for (const std::string &name : RegisteredNames())
    if ((regexec(&re, name.c_str(), 0, nullptr, 0) == 0) != negate) n++;
  regfree(&re);
  return n;
}

}  // namespace

extern "C" {

bool attn_gb_init(int *argc, char **argv) {
  benchmark::Initialize(argc, argv);
  if (*argc > 1) {
    for (int i = 1; i < *argc; i++)
      std::fprintf(stderr, "attnbench: unrecognised benchmark flag '%s'\n", argv[i]);
    return false;
  }
  return true;
}

void attn_gb_add_context(const char *key, const char *value) {
  benchmark::AddCustomContext(key, value ? value : "");
}

bool attn_gb_register(const attn_gb_def *def) {
  if (!def || !def->name || !def->run) return false;
  const attn_gb_run_fn run = def->run;
  void *const user = def->user;
  benchmark::internal::Benchmark *b =
      benchmark::RegisterBenchmark(def->name, [run, user](benchmark::State &st) {
        if (g_stopped) {
          st.SkipWithError("not run: the results could not be saved");
          return;
        }
        run(reinterpret_cast<attn_gb_state *>(&st), user);
      });
  std::string full = def->name;
  if (def->arg_count) {
    std::vector<int64_t> args(def->args, def->args + def->arg_count);
    b->Args(args);
    for (int64_t a : args) full += "/" + std::to_string(a);
  }
  if (def->real_time) b->UseRealTime();
  if (def->repetitions > 0) b->Repetitions(def->repetitions);
  if (def->min_time > 0) b->MinTime(def->min_time);
  switch (def->unit) {
    case ATTN_GB_UNIT_NS:
      b->Unit(benchmark::kNanosecond);
      break;
    case ATTN_GB_UNIT_US:
      b->Unit(benchmark::kMicrosecond);
      break;
    case ATTN_GB_UNIT_MS:
      b->Unit(benchmark::kMillisecond);
      break;
    case ATTN_GB_UNIT_S:
      b->Unit(benchmark::kSecond);
      break;
    case ATTN_GB_UNIT_DEFAULT:
      break;
  }
  RegisteredNames().push_back(full);
  return true;
}

size_t attn_gb_run(const attn_gb_run_opts *opts) {
  static const attn_gb_run_opts kDefaults = {};
  if (!opts) opts = &kDefaults;
  const std::string display = opts->display ? opts->display : "console";
  std::unique_ptr<benchmark::BenchmarkReporter> shown;
  if (display == "json") {
    shown.reset(new benchmark::JSONReporter);
  } else if (display == "none") {
    shown.reset(new NullReporter);
  } else if (display == "compact") {
    shown.reset(new CompactReporter);
  } else {
    shown.reset(new benchmark::ConsoleReporter(opts->color
                                                   ? benchmark::ConsoleReporter::OO_ColorTabular
                                                   : benchmark::ConsoleReporter::OO_Tabular));
  }
  g_stopped = false;
  TeeReporter tee(shown.get(), *opts, CountSelected());
  const size_t n = benchmark::RunSpecifiedBenchmarks(&tee);
  benchmark::ClearRegisteredBenchmarks();
  RegisteredNames().clear();
  return tee.ok() ? n : static_cast<size_t>(-1);
}

double attn_gb_result_counter(const attn_gb_result *r, const char *name, double fallback) {
  for (size_t i = 0; i < r->counter_count; i++)
    if (std::strcmp(r->counter_names[i], name) == 0) return r->counter_values[i];
  return fallback;
}

bool attn_gb_keep_running(attn_gb_state *state) {
  return S(state).KeepRunning();
}
void attn_gb_pause(attn_gb_state *state) {
  S(state).PauseTiming();
}
void attn_gb_resume(attn_gb_state *state) {
  S(state).ResumeTiming();
}
void attn_gb_skip_with_error(attn_gb_state *state, const char *message) {
  S(state).SkipWithError(message ? message : "error");
}
bool attn_gb_error_occurred(const attn_gb_state *state) {
  return S(state).error_occurred();
}

void attn_gb_set_counter(attn_gb_state *state, const char *name, double value,
                         attn_gb_counter_kind kind) {
  benchmark::Counter::Flags flags = benchmark::Counter::kDefaults;
  if (kind == ATTN_GB_RATE_PER_ITER) flags = benchmark::Counter::kIsIterationInvariantRate;
  if (kind == ATTN_GB_AVG_PER_ITER) flags = benchmark::Counter::kAvgIterations;
  S(state).counters[name] = benchmark::Counter(value, flags);
}

void attn_gb_set_label(attn_gb_state *state, const char *label) {
  S(state).SetLabel(label ? label : "");
}
int64_t attn_gb_range(const attn_gb_state *state, size_t index) {
  return S(state).range(index);
}
int64_t attn_gb_iterations(const attn_gb_state *state) {
  return S(state).iterations();
}
void attn_gb_do_not_optimize(const void *p) {
  benchmark::DoNotOptimize(p);
}

}  // extern "C"

// insight_bench: the CPU cost of the ingest detectors (ingest/insight_detectors.h)
// on realistic events, in this process on one core. Reads NDJSON documents
// (one per line; `dashcam_bench --events 200000 --dump-ndjson FILE` writes
// them) and reports, best of --rounds:
//   parse.ns_per_event       DocumentParser without detectors
//   parse_detect.ns_per_event  the same with detectors
//   detect.ns_per_event      InsightDetectors::Detect alone on the messages
//   detect.share_of_parse    (parse_detect - parse) / parse
//     (parse_detect includes training metrics, run identity and the shared
//     anomaly state, i.e. everything --no-detectors turns off)
//   metrics.ns_per_event     ExtractTrainMetrics alone on the messages
//   metrics.ns_per_clean_event  the same on messages with no metric
//   run.ns_per_event         DeriveRunIdentity alone on the parsed fields
//   anomaly.ns_per_event     TrainingAnomalies::Observe alone (one thread)
// and how many events each kind matched and how many carried a metric.
//   build/tests/bench/insight_bench FILE [--rounds 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ingest/document_parser.h"
#include "ingest/insight_detectors.h"
#include "ingest/run_identity.h"
#include "ingest/train_metrics.h"
#include "ingest/training_anomalies.h"

namespace {

using dashcam::ingest::DocumentParser;
using dashcam::ingest::Insight;
using dashcam::ingest::InsightDetectors;
using dashcam::ingest::TrainingAnomalies;
using dashcam::ingest::TrainMetrics;
using Clock = std::chrono::steady_clock;

template <typename F>
double BestNsPerItem(int rounds, std::size_t items, F&& run) {
  double best = 1e300;
  for (int r = 0; r < rounds; ++r) {
    const auto start = Clock::now();
    run();
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    best = std::min(best, ns / static_cast<double>(items));
  }
  return best;
}

std::size_t ParseAll(DocumentParser& parser, const std::vector<std::string>& padded,
                     const std::vector<std::size_t>& sizes) {
  std::size_t ok = 0;
  for (std::size_t i = 0; i < padded.size(); ++i) {
    auto rec = parser.Parse(std::string_view(padded[i].data(), sizes[i]), padded[i].size(), 0);
    ok += rec.ok();
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: insight_bench FILE.ndjson [--rounds N]\n");
    return 2;
  }
  int rounds = 5;
  if (argc >= 4 && std::string(argv[2]) == "--rounds") rounds = std::max(1, std::atoi(argv[3]));
  std::ifstream in(argv[1]);
  std::vector<std::string> padded;
  std::vector<std::size_t> sizes;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    sizes.push_back(line.size());
    padded.push_back(dashcam::ingest::PadForParsing(line));
  }
  if (padded.empty()) {
    std::fprintf(stderr, "no documents in %s\n", argv[1]);
    return 2;
  }
  const InsightDetectors detectors;
  TrainingAnomalies shared_anomalies;
  DocumentParser plain;
  DocumentParser detecting({}, nullptr, &detectors, &shared_anomalies);
  std::vector<std::string> messages;
  std::vector<std::vector<dashcam::storage::Field>> fields;
  std::vector<std::string> clean;  // messages without any metric
  std::size_t with_metric = 0;
  std::map<std::string, std::size_t> kinds;
  for (std::size_t i = 0; i < padded.size(); ++i) {
    auto rec = plain.Parse(std::string_view(padded[i].data(), sizes[i]), padded[i].size(), 0);
    if (!rec.ok()) continue;
    Insight insight;
    if (detectors.Detect(rec->message, {}, insight)) ++kinds[std::string(insight.kind)];
    TrainMetrics m;
    dashcam::ingest::ExtractTrainMetrics(rec->message, m);
    if (m.present | m.non_finite) {
      ++with_metric;
    } else {
      clean.push_back(rec->message);
    }
    messages.push_back(std::move(rec->message));
    fields.push_back(std::move(rec->fields));
  }

  const std::size_t n = padded.size();
  // Interleaved, so that a busy machine slows both alike.
  double parse = 1e300, both = 1e300;
  for (int r = 0; r < rounds; ++r) {
    parse = std::min(parse, BestNsPerItem(1, n, [&] { ParseAll(plain, padded, sizes); }));
    both = std::min(both, BestNsPerItem(1, n, [&] { ParseAll(detecting, padded, sizes); }));
  }
  Insight insight;
  std::size_t hits = 0;
  const double detect = BestNsPerItem(rounds, messages.size(), [&] {
    for (const auto& m : messages) hits += detectors.Detect(m, {}, insight);
  });
  TrainMetrics metrics;
  std::size_t found = 0;
  const double extract = BestNsPerItem(rounds, messages.size(), [&] {
    for (const auto& m : messages) {
      metrics.Clear();
      dashcam::ingest::ExtractTrainMetrics(m, metrics);
      found += metrics.present != 0;
    }
  });
  const double extract_clean = BestNsPerItem(rounds, std::max<std::size_t>(1, clean.size()), [&] {
    for (const auto& m : clean) {
      metrics.Clear();
      dashcam::ingest::ExtractTrainMetrics(m, metrics);
      found += metrics.present != 0;
    }
  });
  std::size_t with_run = 0;
  const double run = BestNsPerItem(rounds, messages.size(), [&] {
    for (std::size_t i = 0; i < messages.size(); ++i) {
      with_run += !dashcam::ingest::DeriveRunIdentity(messages[i], fields[i]).id.empty();
    }
  });
  // Observe on the metrics and run ids of the corpus, in order.
  std::vector<std::pair<std::string, TrainMetrics>> observed;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    TrainMetrics m;
    dashcam::ingest::TakeStructuredMetrics(fields[i], m);
    dashcam::ingest::ExtractTrainMetrics(messages[i], m);
    observed.emplace_back(dashcam::ingest::DeriveRunIdentity(messages[i], fields[i]).id, m);
  }
  std::size_t anomalies = 0;
  const double observe = BestNsPerItem(rounds, observed.size(), [&] {
    TrainingAnomalies state;
    for (const auto& [id, m] : observed) anomalies += state.Observe(id, m, insight);
  });
  std::printf("events %zu\n", n);
  std::printf("parse.ns_per_event %.0f ns\n", parse);
  std::printf("parse_detect.ns_per_event %.0f ns\n", both);
  std::printf("detect.ns_per_event %.0f ns\n", detect);
  std::printf("detect.share_of_parse %.1f %%\n", 100.0 * (both - parse) / parse);
  std::printf("metrics.ns_per_event %.0f ns\n", extract);
  std::printf("metrics.ns_per_clean_event %.0f ns (%zu events)\n", extract_clean, clean.size());
  std::printf("run.ns_per_event %.0f ns\n", run);
  std::printf("anomaly.ns_per_event %.0f ns\n", observe);
  std::printf("events_with_text_metric %zu\n", with_metric);
  std::printf("events_with_run %zu\n", with_run / static_cast<std::size_t>(rounds));
  std::printf("anomalies %zu per pass\n", anomalies / static_cast<std::size_t>(rounds));
  for (const auto& [kind, count] : kinds) std::printf("kind.%s %zu events\n", kind.c_str(), count);
  return 0;
}

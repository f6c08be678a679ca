// The server's counters in Prometheus' text exposition format (GET /metrics): requests by
// status code, predictions by model, request latency, batch sizes and batch run time, images, the
// model version and loads, the precision the model computes in. Updated from every HTTP thread and
// the batcher; one mutex, held for a few additions.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ic {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // "name_bucket{le=...} n" lines (cumulative), then _sum and _count.
  void write(const std::string& name, std::string* out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // one per bound, plus +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  explicit ServerMetrics(int64_t max_batch_size);
  void record_request(const std::string& endpoint, int code, double seconds);
  // A predict or classify (REST or gRPC) for a served model, by its answer's HTTP status.
  void record_model_request(const std::string& model, int code);
  void record_batch(int64_t size, double seconds);
  // Where one REST predict's time went, in seconds (serve_stage_seconds{stage=...}).
  struct Stages {
    double receive = 0;     // first byte to handler: reading the request, waiting for a thread
    double parse = 0;       // JSON
    double preprocess = 0;  // base64, decode, resize
    double queue = 0;       // waiting for a batch
    double model = 0;       // the batches that ran its instances
    double respond = 0;     // the answer's JSON
  };
  void record_stages(const Stages& stages);
  void record_load(bool ok, int64_t version);
  // The model now answering and its precision ("float32"): serve_model_precision's one series.
  void record_precision(const std::string& model, const std::string& precision);
  std::string prometheus_text() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::pair<std::string, int>, uint64_t> model_requests_;
  Histogram latency_;
  Histogram batch_size_;
  Histogram batch_seconds_;
  Stages stage_sums_;
  uint64_t stage_count_ = 0;
  uint64_t images_ = 0;
  uint64_t loads_ok_ = 0, loads_failed_ = 0;
  int64_t version_ = -1;
  std::string model_, precision_;  // empty until a model is loaded
};

}  // namespace ic

#include "runtime/evaluator.h"

namespace ic {

void stage_loss_terms(Backend& backend, const std::vector<const float*>& terms, float* to) {
  for (size_t i = 0; i < terms.size(); ++i) backend.copy(to + i, terms[i], sizeof(float));
}

Result<std::unique_ptr<Evaluator>> Evaluator::create(ModelVariables& state, const Graph& graph,
                                                     float weight_decay) {
  IC_RETURN_IF_ERROR(state.check_matches(graph));
  if (graph.training) return error("Evaluator needs an inference graph");
  std::unique_ptr<Evaluator> e(new Evaluator(state));
  IC_ASSIGN_OR_RETURN(e->graph_, CompiledGraph::compile(graph, state.backend(), state.layout(),
                                                        state.eval_binding()));
  e->loss_terms_ = e->graph_->loss_terms();
  e->loss_host_.resize(e->loss_terms_.size() + 1);
  IC_ASSIGN_OR_RETURN(e->scratch_, state.backend().allocate(e->loss_host_.size() * sizeof(float)));
  e->weight_decay_ = weight_decay;
  const Shape& images = graph.values.at(graph.images).shape;
  e->batch_size_ = images.n();
  e->image_floats_ = images.numel();
  e->num_classes_ = graph.values.at(graph.logits).shape[1];
  e->logits_.resize(static_cast<size_t>(e->batch_size_ * e->num_classes_));
  return e;
}

void Evaluator::begin() {
  counts_ = TopKCounts();
  decay_loss_ = 0;
  if (weight_decay_ != 0.f && state_.layout().decayed_count > 0) {
    state_.backend().sum_squares(state_.eval_binding().weights, state_.layout().decayed_count,
                                 scratch_.as<float>());
    float sum = 0;
    state_.backend().download(&sum, scratch_.data(), sizeof(float));
    decay_loss_ = weight_decay_ * sum / 2.f;
  }
}

void Evaluator::run_batch(const float* images, const int32_t* labels) {
  Backend& backend = state_.backend();
  backend.upload(graph_->images(), images, static_cast<size_t>(image_floats_) * sizeof(float));
  if (graph_->labels() != nullptr && labels != nullptr) {
    backend.upload(graph_->labels(), labels, static_cast<size_t>(batch_size_) * sizeof(int32_t));
  }
  graph_->forward(StepContext{0, state_.global_step});
  backend.download(logits_.data(), graph_->logits(), logits_.size() * sizeof(float));
  if (labels == nullptr) return;  // prediction only (classify)
  accumulate_topk(logits_.data(), labels, batch_size_, num_classes_, &counts_);
  if (loss_terms_.empty()) return;
  stage_loss_terms(backend, loss_terms_, scratch_.as<float>() + 1);
  backend.download(loss_host_.data() + 1, scratch_.as<float>() + 1,
                   loss_terms_.size() * sizeof(float));
  double loss = decay_loss_;
  for (size_t i = 1; i < loss_host_.size(); ++i) loss += loss_host_[i];
  add_batch_loss(loss, &counts_);
}

}  // namespace ic

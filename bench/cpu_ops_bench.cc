// Times the CPU backend's ops on Inception v3 shapes at batch 32: forward, and backward
// (data + weights), best of --iters runs after one warm-up.
//
//   cpu_ops_bench [--threads=2] [--iters=3] [--batch=32] [--filter=substring]
//       per layer: a few convolutions in f32 and bf16, BN+ReLU, pools, the logits layer
//   cpu_ops_bench --network [--dtype=f32|bf16]
//       every convolution of Inception v3 (with AuxLogits) once: the conv part of a step
//   cpu_ops_bench --list
//       the same convolutions as text, one per line, for a peer script to time
//
// On a shared machine run it with OMP_WAIT_POLICY=passive: spinning OpenMP threads otherwise
// steal the CPU from the thread that has work, and each parallel region costs a time slice.
//
// GFLOP/s counts 2 flops per multiply-add; backward counts two convolutions' worth (data and
// weights; one when the layer needs no input gradient).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace {

using namespace ic;

struct Args {
  int threads = 2, iters = 3;
  int64_t batch = 32;
  std::string filter;
  bool network = false;
  bool list = false;  // print the network's convolutions (for peer scripts) and exit
  DType network_dtype = DType::f32;
};

struct Layer {
  std::string name;
  OpDesc desc;
};

Conv2dDesc conv(Shape in, int64_t out, int kh, int kw, int stride, Padding pad, bool dx = true) {
  Conv2dDesc d;
  d.input = in;
  d.out_channels = out;
  d.kernel_h = kh;
  d.kernel_w = kw;
  d.stride_h = d.stride_w = stride;
  d.padding = pad;
  d.needs_input_grad = dx;
  return d;
}

const Padding S = Padding::same, V = Padding::valid;

std::vector<Layer> layers(int64_t n) {
  auto bn = [](Shape in) {
    BatchNormDesc d;
    d.input = in;
    d.fused_relu = true;
    return d;
  };
  Pool2dDesc pool;
  pool.input = Shape{n, 35, 35, 288};
  pool.stride_h = pool.stride_w = 2;
  Pool2dDesc avg;
  avg.input = Shape{n, 17, 17, 768};
  avg.kind = PoolKind::avg;
  avg.padding = S;
  return {
      {"Conv2d_1a_3x3 299x299x3->32 s2", conv({n, 299, 299, 3}, 32, 3, 3, 2, V, false)},
      {"Conv2d_2b_3x3 147x147x32->64", conv({n, 147, 147, 32}, 64, 3, 3, 1, S)},
      {"Conv2d_3b_1x1 73x73x64->80", conv({n, 73, 73, 64}, 80, 1, 1, 1, V)},
      {"Conv2d_4a_3x3 73x73x80->192", conv({n, 73, 73, 80}, 192, 3, 3, 1, V)},
      {"Mixed_5b 5x5 35x35x48->64", conv({n, 35, 35, 48}, 64, 5, 5, 1, S)},
      {"Mixed_5b 3x3 35x35x64->96", conv({n, 35, 35, 64}, 96, 3, 3, 1, S)},
      {"Mixed_6a 3x3 s2 35x35x288->384", conv({n, 35, 35, 288}, 384, 3, 3, 2, V)},
      {"Mixed_6b 1x7 17x17x128->128", conv({n, 17, 17, 128}, 128, 1, 7, 1, S)},
      {"Mixed_6b 7x1 17x17x128->192", conv({n, 17, 17, 128}, 192, 7, 1, 1, S)},
      {"Mixed_6b 1x1 17x17x768->192", conv({n, 17, 17, 768}, 192, 1, 1, 1, S)},
      {"Mixed_7c 1x1 8x8x2048->448", conv({n, 8, 8, 2048}, 448, 1, 1, 1, S)},
      {"Mixed_7c 3x3 8x8x448->384", conv({n, 8, 8, 448}, 384, 3, 3, 1, S)},
      {"BatchNorm+ReLU 35x35x288", bn({n, 35, 35, 288})},
      {"BatchNorm+ReLU 147x147x64", bn({n, 147, 147, 64})},
      {"BatchNorm+ReLU 149x149x32", bn({n, 149, 149, 32})},
      {"BatchNorm+ReLU 71x71x192", bn({n, 71, 71, 192})},
      {"BatchNorm+ReLU 17x17x192", bn({n, 17, 17, 192})},
      {"BatchNorm+ReLU 8x8x384", bn({n, 8, 8, 384})},
      {"MaxPool 3x3 s2 35x35x288", pool},
      {"AvgPool 3x3 SAME 17x17x768", avg},
      {"Logits dense 2048->1001", DenseDesc{n, 2048, 1001, true, true}},
  };
}

// Every convolution of Inception v3 at 299x299 (TF-slim's inception_v3 with AuxLogits).
std::vector<Layer> inception_v3_convs(int64_t n) {
  std::vector<Layer> l;
  auto add = [&](const std::string& name, Shape in, int64_t out, int kh, int kw, int stride = 1,
                 Padding pad = S, bool dx = true) {
    l.push_back({name, conv(in, out, kh, kw, stride, pad, dx)});
  };
  add("Conv2d_1a_3x3", {n, 299, 299, 3}, 32, 3, 3, 2, V, false);
  add("Conv2d_2a_3x3", {n, 149, 149, 32}, 32, 3, 3, 1, V);
  add("Conv2d_2b_3x3", {n, 147, 147, 32}, 64, 3, 3);
  add("Conv2d_3b_1x1", {n, 73, 73, 64}, 80, 1, 1, 1, V);
  add("Conv2d_4a_3x3", {n, 73, 73, 80}, 192, 3, 3, 1, V);
  const int64_t in5[] = {192, 256, 288}, pool5[] = {32, 64, 64};
  for (int i = 0; i < 3; ++i) {  // Mixed_5b, 5c, 5d at 35x35
    const std::string m = std::string("Mixed_5") + char('b' + i);
    const Shape x{n, 35, 35, in5[i]};
    add(m + "/Branch_0/Conv2d_0a_1x1", x, 64, 1, 1);
    add(m + "/Branch_1/Conv2d_0a_1x1", x, 48, 1, 1);
    add(m + "/Branch_1/Conv2d_0b_5x5", {n, 35, 35, 48}, 64, 5, 5);
    add(m + "/Branch_2/Conv2d_0a_1x1", x, 64, 1, 1);
    add(m + "/Branch_2/Conv2d_0b_3x3", {n, 35, 35, 64}, 96, 3, 3);
    add(m + "/Branch_2/Conv2d_0c_3x3", {n, 35, 35, 96}, 96, 3, 3);
    add(m + "/Branch_3/Conv2d_0b_1x1", x, pool5[i], 1, 1);
  }
  add("Mixed_6a/Branch_0/Conv2d_1a_1x1", {n, 35, 35, 288}, 384, 3, 3, 2, V);
  add("Mixed_6a/Branch_1/Conv2d_0a_1x1", {n, 35, 35, 288}, 64, 1, 1);
  add("Mixed_6a/Branch_1/Conv2d_0b_3x3", {n, 35, 35, 64}, 96, 3, 3);
  add("Mixed_6a/Branch_1/Conv2d_1a_1x1", {n, 35, 35, 96}, 96, 3, 3, 2, V);
  const int64_t mid6[] = {128, 160, 160, 192};
  for (int i = 0; i < 4; ++i) {  // Mixed_6b..6e at 17x17x768
    const std::string m = std::string("Mixed_6") + char('b' + i);
    const Shape x{n, 17, 17, 768};
    const int64_t c = mid6[i];
    const Shape y{n, 17, 17, c};
    add(m + "/Branch_0/Conv2d_0a_1x1", x, 192, 1, 1);
    add(m + "/Branch_1/Conv2d_0a_1x1", x, c, 1, 1);
    add(m + "/Branch_1/Conv2d_0b_1x7", y, c, 1, 7);
    add(m + "/Branch_1/Conv2d_0c_7x1", y, 192, 7, 1);
    add(m + "/Branch_2/Conv2d_0a_1x1", x, c, 1, 1);
    add(m + "/Branch_2/Conv2d_0b_7x1", y, c, 7, 1);
    add(m + "/Branch_2/Conv2d_0c_1x7", y, c, 1, 7);
    add(m + "/Branch_2/Conv2d_0d_7x1", y, c, 7, 1);
    add(m + "/Branch_2/Conv2d_0e_1x7", y, 192, 1, 7);
    add(m + "/Branch_3/Conv2d_0b_1x1", x, 192, 1, 1);
  }
  add("AuxLogits/Conv2d_1b_1x1", {n, 5, 5, 768}, 128, 1, 1);
  add("AuxLogits/Conv2d_2a_5x5", {n, 5, 5, 128}, 768, 5, 5, 1, V);
  add("AuxLogits/Conv2d_2b_1x1", {n, 1, 1, 768}, 1001, 1, 1);
  add("Mixed_7a/Branch_0/Conv2d_0a_1x1", {n, 17, 17, 768}, 192, 1, 1);
  add("Mixed_7a/Branch_0/Conv2d_1a_3x3", {n, 17, 17, 192}, 320, 3, 3, 2, V);
  add("Mixed_7a/Branch_1/Conv2d_0a_1x1", {n, 17, 17, 768}, 192, 1, 1);
  add("Mixed_7a/Branch_1/Conv2d_0b_1x7", {n, 17, 17, 192}, 192, 1, 7);
  add("Mixed_7a/Branch_1/Conv2d_0c_7x1", {n, 17, 17, 192}, 192, 7, 1);
  add("Mixed_7a/Branch_1/Conv2d_1a_3x3", {n, 17, 17, 192}, 192, 3, 3, 2, V);
  const int64_t in7[] = {1280, 2048};
  for (int i = 0; i < 2; ++i) {  // Mixed_7b, 7c at 8x8
    const std::string m = std::string("Mixed_7") + char('b' + i);
    const Shape x{n, 8, 8, in7[i]};
    add(m + "/Branch_0/Conv2d_0a_1x1", x, 320, 1, 1);
    add(m + "/Branch_1/Conv2d_0a_1x1", x, 384, 1, 1);
    add(m + "/Branch_1/Conv2d_0b_1x3", {n, 8, 8, 384}, 384, 1, 3);
    add(m + "/Branch_1/Conv2d_0b_3x1", {n, 8, 8, 384}, 384, 3, 1);
    add(m + "/Branch_2/Conv2d_0a_1x1", x, 448, 1, 1);
    add(m + "/Branch_2/Conv2d_0b_3x3", {n, 8, 8, 448}, 384, 3, 3);
    add(m + "/Branch_2/Conv2d_0c_1x3", {n, 8, 8, 384}, 384, 1, 3);
    add(m + "/Branch_2/Conv2d_0d_3x1", {n, 8, 8, 384}, 384, 3, 1);
    add(m + "/Branch_3/Conv2d_0b_1x1", x, 192, 1, 1);
  }
  add("Logits/Conv2d_1c_1x1", {n, 1, 1, 2048}, 1001, 1, 1);
  return l;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Timing {
  bool ok = false;
  std::string message;
  double fwd = 1e30, bwd = 1e30;  // seconds, best of the runs
  double fwd_flops = 0, bwd_flops = 0;
};

// Compiles `desc`, binds fresh buffers (random inputs), and times forward and backward.
Timing time_op(Backend& backend, const OpDesc& desc, int iters) {
  Timing t;
  Shape in, out;
  size_t params = 0, bias = 0, state = 0;
  bool dx = true;
  if (auto* c = std::get_if<Conv2dDesc>(&desc)) {
    in = c->input;
    out = c->output();
    params = size_t(c->kernel_h * c->kernel_w * c->input.c() * c->out_channels);
    dx = c->needs_input_grad;
  } else if (auto* b = std::get_if<BatchNormDesc>(&desc)) {
    in = out = b->input;
    params = state = size_t(in.c());
  } else if (auto* p = std::get_if<Pool2dDesc>(&desc)) {
    in = p->input;
    out = p->output();
  } else if (auto* d = std::get_if<DenseDesc>(&desc)) {
    in = Shape{d->batch, d->in_features};
    out = Shape{d->batch, d->out_features};
    params = size_t(d->in_features * d->out_features);
    bias = size_t(d->out_features);
  }
  auto kernel = backend.compile(desc);
  if (!kernel.ok()) {
    t.message = kernel.status().message();
    return t;
  }
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<DeviceBuffer> keep;
  auto buffer = [&](size_t bytes, bool random) {
    keep.push_back(std::move(backend.allocate(std::max<size_t>(bytes, 4))).value());
    auto* f = keep.back().as<float>();
    for (size_t i = 0; i < bytes / 4; ++i) f[i] = random ? dist(gen) : 1.f;
    return keep.back().data();
  };
  OpBindings b;
  b.inputs = {buffer(size_t(in.numel()) * 4, true)};
  b.outputs = {buffer(size_t(out.numel()) * 4, false)};
  for (size_t count : {params, bias}) {
    if (!count) continue;
    b.params.push_back(buffer(count * 4, true));
    b.param_grads.push_back(buffer(count * 4, false));
  }
  if (state) b.state = {buffer(state * 4, false), buffer(state * 4, false)};
  b.output_grads = {buffer(size_t(out.numel()) * 4, true)};
  b.input_grads = {dx ? buffer(size_t(in.numel()) * 4, false) : nullptr};
  b.saved = (*kernel)->saved_bytes() ? buffer((*kernel)->saved_bytes(), false) : nullptr;
  b.workspace =
      (*kernel)->workspace_bytes() ? buffer((*kernel)->workspace_bytes(), false) : nullptr;
  if (Status s = (*kernel)->bind(b); !s.ok()) {
    t.message = s.message();
    return t;
  }
  StepContext ctx;
  (*kernel)->forward(ctx);
  (*kernel)->backward(ctx);
  for (int i = 0; i < iters; ++i) {
    auto start = std::chrono::steady_clock::now();
    (*kernel)->forward(ctx);
    t.fwd = std::min(t.fwd, seconds_since(start));
    start = std::chrono::steady_clock::now();
    (*kernel)->backward(ctx);
    t.bwd = std::min(t.bwd, seconds_since(start));
  }
  t.fwd_flops = 2.0 * double(op_multiply_adds(desc));
  t.bwd_flops = t.fwd_flops * (dx ? 2 : 1);
  t.ok = true;
  return t;
}

void print_row(const std::string& name, const char* type, const Timing& t) {
  if (!t.ok) {
    std::printf("%-40s %-8s %s\n", name.c_str(), type, t.message.c_str());
  } else if (t.fwd_flops > 0) {
    std::printf("%-40s %-8s %10.2f %10.1f %10.2f %10.1f\n", name.c_str(), type, t.fwd * 1e3,
                t.fwd_flops / t.fwd * 1e-9, t.bwd * 1e3, t.bwd_flops / t.bwd * 1e-9);
  } else {
    std::printf("%-40s %-8s %10.2f %10s %10.2f %10s\n", name.c_str(), type, t.fwd * 1e3, "-",
                t.bwd * 1e3, "-");
  }
  std::fflush(stdout);
}

// One line per convolution: name N H W C filters kh kw stride padding needs_input_grad.
int list_network(const Args& args) {
  for (const Layer& layer : inception_v3_convs(args.batch)) {
    const auto& c = std::get<Conv2dDesc>(layer.desc);
    std::printf("%s %lld %lld %lld %lld %lld %d %d %d %s %d\n", layer.name.c_str(),
                static_cast<long long>(c.input.n()), static_cast<long long>(c.input.h()),
                static_cast<long long>(c.input.w()), static_cast<long long>(c.input.c()),
                static_cast<long long>(c.out_channels), c.kernel_h, c.kernel_w, c.stride_h,
                c.padding == Padding::same ? "SAME" : "VALID", c.needs_input_grad ? 1 : 0);
  }
  return 0;
}

int run(const Args& args) {
  if (args.list) return list_network(args);
  BackendOptions options;
  options.num_threads = args.threads;
  auto backend = make_cpu_backend(options);
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", backend.status().message().c_str());
    return 1;
  }
  std::printf("%s, batch %lld, best of %d runs after 1 warm-up\n",
              (*backend)->description().c_str(), static_cast<long long>(args.batch), args.iters);
  std::printf("%-40s %-8s %10s %10s %10s %10s\n", "layer", "type", "fwd ms", "fwd GF/s", "bwd ms",
              "bwd GF/s");
  const std::vector<Layer> list =
      args.network ? inception_v3_convs(args.batch) : layers(args.batch);
  Timing total;
  total.ok = true;
  total.fwd = total.bwd = 0;
  for (const Layer& layer : list) {
    if (!args.filter.empty() && layer.name.find(args.filter) == std::string::npos) continue;
    for (DType type : {DType::f32, DType::bf16}) {
      if (args.network && type != args.network_dtype) continue;
      OpDesc desc = layer.desc;
      if (auto* c = std::get_if<Conv2dDesc>(&desc)) {
        c->compute = type;
      } else if (type == DType::bf16) {
        continue;  // only convolutions have a bf16 variant
      }
      const Timing t = time_op(**backend, desc, args.iters);
      print_row(layer.name, dtype_name(type), t);
      if (!t.ok) continue;
      total.fwd += t.fwd;
      total.bwd += t.bwd;
      total.fwd_flops += t.fwd_flops;
      total.bwd_flops += t.bwd_flops;
    }
  }
  if (args.network) {
    print_row("TOTAL (all convolutions)", dtype_name(args.network_dtype), total);
    std::printf("step (fwd+bwd): %.3f s, %.1f GFLOP/s over %.0f GFLOP\n", total.fwd + total.bwd,
                (total.fwd_flops + total.bwd_flops) / (total.fwd + total.bwd) * 1e-9,
                (total.fwd_flops + total.bwd_flops) * 1e-9);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) {
      return a.rfind(flag, 0) == 0 ? a.substr(std::strlen(flag)) : std::string();
    };
    if (!value("--threads=").empty()) {
      args.threads = std::atoi(value("--threads=").c_str());
    } else if (!value("--iters=").empty()) {
      args.iters = std::max(1, std::atoi(value("--iters=").c_str()));
    } else if (!value("--batch=").empty()) {
      args.batch = std::max(1, std::atoi(value("--batch=").c_str()));
    } else if (!value("--filter=").empty()) {
      args.filter = value("--filter=");
    } else if (a == "--network") {
      args.network = true;
    } else if (a == "--list") {
      args.list = true;
    } else if (a == "--dtype=f32" || a == "--dtype=bf16") {
      args.network_dtype = a == "--dtype=f32" ? DType::f32 : DType::bf16;
    } else {
      std::fprintf(stderr,
                   "unknown flag %s\nusage: %s [--threads=N] [--iters=N] [--batch=N] "
                   "[--filter=substring] [--network [--dtype=f32|bf16]] [--list]\n",
                   a.c_str(), argv[0]);
      return 2;
    }
  }
  return run(args);
}

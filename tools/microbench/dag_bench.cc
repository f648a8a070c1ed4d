// concord-dagbench: a synthetic data-parallel training step as a task DAG on the
// dependency engine (src/engine/engine.h), with its gradients synchronised by each KVStore
// design (funneled, concurrent, depchain; src/kvstore/kvstore.h) and by the runtime's
// negotiated allreduce (concord::allreduce_async), after Mamidala, "Efficient Embedding of
// MPI Collectives in MXNET DAGs for scaling Deep Learning".
//
// The model: L fully connected layers W_l (N x N float32), a batch of B rows per rank.
// Per iteration, as engine ops (real CPU work, so compute can hide communication):
//   forward   A_{l+1} = A_l W_l                (l = 0..L-1; B x N x N multiply-adds)
//   backward  G_l = A_l^T D_{l+1}, D_l = D_{l+1} W_l^T   (l = L-1..0; D_L = A_L / N)
//   push G_l (sum over ranks), pull into R_l, update W_l -= lr R_l
// Pushes are issued in backward order (L-1 first), all pushes before all pulls; with
// --per-layer the thread that submits backward waits for each layer's backward ops and then
// pushes its gradient before submitting the next layer, as a framework's per-layer gradient
// hook runs on the thread executing backward (PyTorch's autograd hooks), so a push that
// blocks (funneled) stalls the rest of the backward pass.
//
// Printed per mode: the time per iteration (max over ranks), the time of the same
// iteration without communication ("compute") and of its communication alone ("comm"),
// each measured in that mode's run, in the same conditions,
// and the share of communication hidden behind compute:
//   hidden = clamp((compute + comm - iteration) / comm, 0, 1),
// and the ideal: the shortest iteration of a design that sends the gradients in the order
// backward computes them (funneled and depchain here), max(compute, first + comm, last +
// comm / L), where first and last are the times from an iteration's start to its first
// gradient (G_{L-1}) and to its last (G_0), without communication: the link carries every
// gradient after the first is computed, and the next forward pass needs W_0, whose gradient
// is computed last and sent last (comm / L: the layers are the same size). It is estimated
// from the means of separate runs, so a measured iteration can fall a little below it. (A
// design that sends G_0 first and the rest during the next forward pass, C-Cube's order, is
// bound only by max(compute, comm, last + comm / L).)
// Every mode starts from the same weights; afterwards the weights must be bit-identical on
// all ranks (#wrong counts the modes where they are not; exit code 1 then). -J writes JSON.
#include <mpi.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include "concord/concord.h"
#include "engine/engine.h"
#include "kvstore/kvstore.h"
#include "kvstore/kvstore_world.h"
#include "tools/common/mpi_tool.h"

namespace concord::tools {
namespace {

using engine::Engine;
using engine::FnKind;
using engine::Var;

// Defaults: the configuration of docs/performance.md (8 x 4 MiB of gradients; batch 8 gives
// compute of the same order as communication at 2 ranks on a 2-core node).
struct Config {
  int layers = 8;
  int dim = 1024;
  int batch = 8;
  int iterations = 5;
  int warmup = 1;
  int cpu_threads = 2;
  int communicators = 2;
  int outstanding = 8;
  /// Push each G_l once its layer's backward ops are done, from the thread submitting
  /// backward (a framework's per-layer backward hook); false: the whole backward is
  /// submitted first.
  bool per_layer = false;
  std::string modes = "funneled,concurrent,depchain,runtime";
  std::string json;
};

// c[M x N] = op(a) op(b), op(a) M x K, op(b) K x N; row-major, a/b transposed when asked.
void matmul(const float* a, const float* b, float* c, int M, int K, int N, bool ta, bool tb) {
  std::fill(c, c + static_cast<size_t>(M) * N, 0.0f);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      const float aik = ta ? a[static_cast<size_t>(k) * M + i] : a[static_cast<size_t>(i) * K + k];
      float* row = c + static_cast<size_t>(i) * N;
      if (tb) {
        for (int j = 0; j < N; ++j) row[j] += aik * b[static_cast<size_t>(j) * K + k];
      } else {
        const float* brow = b + static_cast<size_t>(k) * N;
        for (int j = 0; j < N; ++j) row[j] += aik * brow[j];
      }
    }
}

// How gradients travel: push G_l (readable once gvar's writes are done), pull into R_l.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual void push(int layer, const TensorView& grad, Var* grad_var) = 0;
  virtual void pull(int layer, const TensorView& out, Var* out_var) = 0;
};

class KVStoreSync : public GradientSync {
 public:
  explicit KVStoreSync(kvstore::KVStore& kv) : kv_(kv) {}
  void push(int layer, const TensorView& grad, Var* grad_var) override { kv_.push(layer, grad, grad_var); }
  void pull(int layer, const TensorView& out, Var* out_var) override { kv_.pull(layer, out, out_var); }

 private:
  kvstore::KVStore& kv_;
};

// The runtime's allreduce_async as an asynchronous engine op (reads G_l, writes R_l),
// pushed to the engine at push() so that it starts once G_l is computed (pull() has nothing
// left to do); a waiter thread completes the ops in submission order, blocked in
// Handle::wait() (no polling: a poller would take CPU from the compute and the background
// thread).
class RuntimeSync : public GradientSync {
 public:
  /// `outputs[l]`: R_l and its var, where layer l's sum goes.
  RuntimeSync(Engine& engine, std::vector<std::pair<TensorView, Var*>> outputs)
      : engine_(engine), outputs_(std::move(outputs)), waiter_([this] { wait_loop(); }) {}
  ~RuntimeSync() override {
    // Ops still queued (e.g. after an error left an iteration half-submitted) capture this
    // object: let them run and complete while the waiter still serves them.
    try {
      engine_.wait_all();
    } catch (...) {  // their errors were reported where they were waited for
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    ready_.notify_one();
    waiter_.join();
  }
  void push(int layer, const TensorView& grad, Var* grad_var) override {
    const auto [out, out_var] = outputs_.at(layer);
    engine_.push_async(
        [this, layer, grad, out](engine::OnComplete done) {
          Handle handle = allreduce_async("dagbench.layer." + std::to_string(layer), grad, out);
          {
            std::lock_guard<std::mutex> lock(mutex_);
            waiting_.push_back({handle, std::move(done)});
          }
          ready_.notify_one();
        },
        {grad_var}, {out_var}, {FnKind::kComm, 0, "runtime allreduce"});
  }
  void pull(int, const TensorView&, Var*) override {}

 private:
  void wait_loop() {
    while (true) {
      std::pair<Handle, engine::OnComplete> next;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !waiting_.empty(); });
        if (waiting_.empty()) return;  // stopped, nothing left
        next = std::move(waiting_.front());
        waiting_.pop_front();
      }
      std::exception_ptr error;
      try {
        next.first.wait();
      } catch (...) {
        error = std::current_exception();
      }
      next.second(error);
    }
  }
  Engine& engine_;
  const std::vector<std::pair<TensorView, Var*>> outputs_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<Handle, engine::OnComplete>> waiting_;
  bool stop_ = false;
  std::thread waiter_;
};

// No communication: the iteration's compute alone (R_l keeps its last value).
class NoSync : public GradientSync {
 public:
  void push(int, const TensorView&, Var*) override {}
  void pull(int, const TensorView&, Var*) override {}
};

// The model's buffers and vars on one rank.
class Model {
 public:
  Model(Engine& engine, const Config& config, int rank) : engine_(engine), c_(config) {
    const size_t L = config.layers, N = config.dim, B = config.batch;
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(N)));
    weights_.assign(L, std::vector<float>(N * N));
    for (auto& w : weights_) std::generate(w.begin(), w.end(), [&] { return normal(rng); });
    grads_.assign(L, std::vector<float>(N * N, 0.0f));
    reduced_ = grads_;
    activations_.assign(L + 1, std::vector<float>(B * N, 0.0f));
    deltas_ = activations_;
    std::mt19937 data_rng(1000 + rank);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::generate(activations_[0].begin(), activations_[0].end(), [&] { return uniform(data_rng); });
    auto vars = [&](size_t n) {
      std::vector<Var*> v(n);
      for (auto& var : v) var = engine.new_var();
      return v;
    };
    w_vars_ = vars(L);
    g_vars_ = vars(L);
    r_vars_ = vars(L);
    a_vars_ = vars(L + 1);
    d_vars_ = vars(L + 1);
  }
  ~Model() {
    engine_.wait_all();
    for (auto* group : {&w_vars_, &g_vars_, &r_vars_, &a_vars_, &d_vars_})
      for (auto* var : *group) engine_.delete_var(var);
  }

  TensorView weight(int l) { return {weights_[l].data(), DataType::kFloat32, {c_.dim, c_.dim}}; }
  TensorView grad(int l) { return {grads_[l].data(), DataType::kFloat32, {c_.dim, c_.dim}}; }
  TensorView reduced(int l) { return {reduced_[l].data(), DataType::kFloat32, {c_.dim, c_.dim}}; }
  Var* reduced_var(int l) { return r_vars_[l]; }

  // Pushes one iteration's ops; `compute` false leaves only the communication.
  void iteration(GradientSync& sync, bool compute, bool communicate) {
    const int L = c_.layers, N = c_.dim, B = c_.batch;
    if (compute) {
      for (int l = 0; l < L; ++l)
        engine_.push_sync([this, l, B, N] { matmul(act(l), w(l), act(l + 1), B, N, N, false, false); },
                          {a_vars_[l], w_vars_[l]}, {a_vars_[l + 1]}, {FnKind::kCpu, 0, "forward"});
      engine_.push_sync(
          [this, L, B, N] {
            for (size_t i = 0; i < static_cast<size_t>(B) * N; ++i) delta(L)[i] = act(L)[i] / N;
          },
          {a_vars_[L]}, {d_vars_[L]}, {FnKind::kCpu, 0, "loss"});
      for (int l = L - 1; l >= 0; --l) {
        engine_.push_sync([this, l, B, N] { matmul(act(l), delta(l + 1), grads_[l].data(), N, B, N, true, false); },
                          {a_vars_[l], d_vars_[l + 1]}, {g_vars_[l]}, {FnKind::kCpu, 1, "weight gradient"});
        if (l > 0)
          engine_.push_sync([this, l, B, N] { matmul(delta(l + 1), w(l), delta(l), B, N, N, false, true); },
                            {d_vars_[l + 1], w_vars_[l]}, {d_vars_[l]}, {FnKind::kCpu, 0, "input gradient"});
        if (communicate && c_.per_layer) {  // a hook after the layer's backward, on the thread running it
          engine_.wait_for_var(g_vars_[l]);
          if (l > 0) engine_.wait_for_var(d_vars_[l]);
          sync.push(l, grad(l), g_vars_[l]);
        }
      }
    }
    if (communicate) {
      if (!compute || !c_.per_layer)
        for (int l = L - 1; l >= 0; --l) sync.push(l, grad(l), g_vars_[l]);
      for (int l = L - 1; l >= 0; --l) sync.pull(l, reduced(l), r_vars_[l]);
    }
    if (compute)
      for (int l = 0; l < L; ++l)
        engine_.push_sync(
            [this, l, N] {
              for (size_t i = 0; i < static_cast<size_t>(N) * N; ++i) weights_[l][i] -= 1e-4f * reduced_[l][i];
            },
            {r_vars_[l]}, {w_vars_[l]}, {FnKind::kCpu, 0, "update"});
  }

  /// Seconds from the start of an iteration with no communication until its first gradient
  /// (G_{L-1}: the forward pass, the loss and one weight gradient) and until its last (G_0:
  /// the whole backward pass) are computed; means of `iterations`, each started on an idle
  /// engine.
  std::pair<double, double> gradient_times(int iterations) {
    NoSync none;
    double first = 0, last = 0;
    for (int i = 0; i < iterations; ++i) {
      engine_.wait_all();
      const auto start = std::chrono::steady_clock::now();
      iteration(none, true, false);
      engine_.wait_for_var(g_vars_[c_.layers - 1]);
      first += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      engine_.wait_for_var(g_vars_[0]);
      last += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    engine_.wait_all();
    return {first / iterations, last / iterations};
  }

  // FNV-1a of every weight's bytes.
  uint64_t weights_hash() {
    engine_.wait_all();
    uint64_t h = 1469598103934665603ull;
    for (auto& w : weights_)
      for (size_t i = 0; i < w.size() * sizeof(float); ++i)
        h = (h ^ reinterpret_cast<uint8_t*>(w.data())[i]) * 1099511628211ull;
    return h;
  }

 private:
  float* act(int l) { return activations_[l].data(); }
  float* delta(int l) { return deltas_[l].data(); }
  const float* w(int l) { return weights_[l].data(); }

  Engine& engine_;
  Config c_;
  std::vector<std::vector<float>> weights_, grads_, reduced_, activations_, deltas_;
  std::vector<Var*> w_vars_, g_vars_, r_vars_, a_vars_, d_vars_;
};

double max_over_ranks(double value) {
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return value;
}

// Seconds per iteration of `iterations` iterations after `warmup`, max over ranks.
double time_iterations(Engine& engine, Model& model, GradientSync& sync, const Config& c, bool compute,
                       bool communicate) {
  for (int i = 0; i < c.warmup; ++i) model.iteration(sync, compute, communicate);
  engine.wait_all();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < c.iterations; ++i) model.iteration(sync, compute, communicate);
  engine.wait_all();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return max_over_ranks(seconds / c.iterations);
}

struct Result {
  std::string mode;
  double iteration_s = 0, compute_s = 0, comm_s = 0, hidden = 0;
  /// The shortest iteration of an in-order design (see the file comment).
  double ideal_s = 0;
  bool consistent = true;
};

// Runs one mode: its compute alone, its communication alone, then the full iterations
// (all in the same conditions); checks the weights.
Result run_mode(const std::string& mode, const Config& c, int rank) {
  Engine engine(c.cpu_threads, 1);
  Model model(engine, c, rank);
  std::unique_ptr<Communicator> world;
  std::unique_ptr<kvstore::KVStore> kv;
  std::unique_ptr<GradientSync> sync;
  if (mode == "runtime") {
    std::vector<std::pair<TensorView, Var*>> outputs;
    for (int l = 0; l < c.layers; ++l) outputs.emplace_back(model.reduced(l), model.reduced_var(l));
    sync = std::make_unique<RuntimeSync>(engine, std::move(outputs));
  } else {
    kvstore::KVStoreOptions options;
    options.type = kvstore::kvstore_type_from_name(mode);
    options.communicators = c.communicators;
    options.outstanding = c.outstanding;
    options.cost_params = CostParams::from_env();
    world = kvstore::make_world(options.type);
    kv = std::make_unique<kvstore::KVStore>(engine, *world, options);
    for (int l = 0; l < c.layers; ++l) kv->init(l, model.grad(l));
    sync = std::make_unique<KVStoreSync>(*kv);
  }
  Result result{mode};
  NoSync none;
  result.compute_s = time_iterations(engine, model, none, c, true, false);
  const auto [first_s, last_s] = model.gradient_times(c.iterations);
  result.comm_s = time_iterations(engine, model, *sync, c, false, true);
  result.ideal_s =
      max_over_ranks(std::max({result.compute_s, first_s + result.comm_s, last_s + result.comm_s / c.layers}));
  result.iteration_s = time_iterations(engine, model, *sync, c, true, true);
  result.hidden = std::clamp((result.compute_s + result.comm_s - result.iteration_s) / result.comm_s, 0.0, 1.0);
  uint64_t hash = model.weights_hash(), low = hash, high = hash;
  MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  result.consistent = low == high;
  return result;
}

int run(int argc, char** argv) {
  MpiTool mpi(argc, argv);
  Config c;
  CLI::App app{
      "concord-dagbench: a training DAG on the engine, gradients through each KVStore design "
      "and the runtime's allreduce; time per iteration and communication hidden behind compute"};
  app.add_option("-L,--layers", c.layers, "layers (N x N float32 weights each)")->check(CLI::PositiveNumber);
  app.add_option("-N,--dim", c.dim, "layer width N")->check(CLI::PositiveNumber);
  app.add_option("-B,--batch", c.batch, "rows per rank and iteration")->check(CLI::PositiveNumber);
  app.add_option("-n,--iterations", c.iterations, "timed iterations per mode")->check(CLI::PositiveNumber);
  app.add_option("-w,--warmup", c.warmup, "untimed iterations first")->check(CLI::NonNegativeNumber);
  app.add_option("-t,--cpu-threads", c.cpu_threads, "engine CPU workers")->check(CLI::PositiveNumber);
  app.add_option("-C,--communicators", c.communicators, "concurrent: communicators")->check(CLI::PositiveNumber);
  app.add_option("-o,--outstanding", c.outstanding, "concurrent: pushes per wait")->check(CLI::PositiveNumber);
  app.add_flag("--per-layer", c.per_layer,
               "push each layer's gradient from the thread running backward once the layer's backward ops are "
               "done (a per-layer hook); default: the whole backward pass is submitted first");
  app.add_option("-m,--modes", c.modes, "comma-separated: funneled, concurrent, depchain, runtime");
  app.add_option("-J,--json", c.json, "write the results as JSON to this file (rank 0)");
  if (auto code = mpi.parse(app, argc, argv)) return *code;

  std::vector<Result> results;
  std::stringstream modes(c.modes);
  for (std::string mode; std::getline(modes, mode, ',');) {
    const bool runtime = mode == "runtime";
    if (runtime) concord::init();
    results.push_back(run_mode(mode, c, mpi.rank()));
    if (runtime) concord::shutdown();
  }

  int wrong = 0;
  for (const auto& r : results) wrong += r.consistent ? 0 : 1;
  if (mpi.rank() == 0) {
    std::printf(
        "# concord-dagbench: %d ranks, %d layers of %dx%d float32 (%.1f KiB each), batch %d, %d iterations, pushes "
        "%s\n",
        mpi.size(), c.layers, c.dim, c.dim, c.dim * c.dim * 4 / 1024.0, c.batch, c.iterations,
        c.per_layer ? "per layer during backward" : "after the whole backward is submitted");
    std::printf("%-12s %14s %12s %12s %10s %10s %8s\n", "mode", "iteration_ms", "compute_ms", "comm_ms", "hidden_%",
                "ideal_ms", "#wrong");
    for (const auto& r : results)
      std::printf("%-12s %14.3f %12.3f %12.3f %10.1f %10.3f %8d\n", r.mode.c_str(), r.iteration_s * 1e3,
                  r.compute_s * 1e3, r.comm_s * 1e3, r.hidden * 100, r.ideal_s * 1e3, r.consistent ? 0 : 1);
    if (!c.json.empty()) {
      nlohmann::json out = {{"ranks", mpi.size()},
                            {"layers", c.layers},
                            {"dim", c.dim},
                            {"batch", c.batch},
                            {"iterations", c.iterations},
                            {"per_layer", c.per_layer},
                            {"results", nlohmann::json::array()}};
      for (const auto& r : results)
        out["results"].push_back({{"mode", r.mode},
                                  {"iteration_s", r.iteration_s},
                                  {"compute_s", r.compute_s},
                                  {"comm_s", r.comm_s},
                                  {"hidden_share", r.hidden},
                                  {"ideal_s", r.ideal_s},
                                  {"consistent", r.consistent}});
      std::ofstream(c.json) << out.dump(2) << "\n";
    }
  }
  return wrong == 0 ? 0 : 1;
}

}  // namespace
}  // namespace concord::tools

int main(int argc, char** argv) {
  try {
    return concord::tools::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "concord-dagbench: %s\n", e.what());
    return 2;
  }
}

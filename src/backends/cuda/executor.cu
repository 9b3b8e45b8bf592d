// src/backends/cuda/executor.cu - weight upload, memory plan, op binding and CUDA-graph replay (see
// executor.cuh). The ops are bound by their own files (ops.cuh); the head by detect.cuh's DetectHead.
#include "executor.cuh"

#include <algorithm>
#include <chrono>
#include <set>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "common.cuh"
#include "conv.cuh"
#include "conv_chain.cuh"
#include "conv_detail.cuh"
#include "conv_dw_branch.cuh"
#include "conv_halo_pair.cuh"
#include "conv_stem_pair.cuh"
#include "core/half.hpp"
#include "core/log.hpp"
#include "core/tune_cache.hpp"
#include "detect.cuh"
#include "elementwise.cuh"
#include "graph/graph.hpp"
#include "graph/fuse_chains.hpp"
#include "graph/memory_plan.hpp"
#include "graph/pad_channels.hpp"
#include "graph/schedule.hpp"
#include "model/model_file.hpp"
#include "preprocess.cuh"

namespace yolo12::cuda {
namespace {

constexpr std::size_t kAlign = 256;
// YOLO12_STAGING_OVERLAP: the staging block goes to the device in about kStagingBands ranges of at least
// kMinStagingBand bytes of pixels (a copy's fixed cost is a few microseconds).
constexpr int kStagingBands = 8;
constexpr std::size_t kMinStagingBand = std::size_t(1) << 20;

// How many streams the network may use (graph/schedule.hpp): YOLO12_CUDA_STREAMS, 1..16, default
// kDefaultStreams. 1 is the serial execution order on the caller's stream.
constexpr int kDefaultStreams = 4;
int network_streams() {
  const char* env = std::getenv("YOLO12_CUDA_STREAMS");
  if (!env || !*env) return kDefaultStreams;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  if (*end != '\0' || v < 1 || v > 16)
    throw OptionError(std::string("YOLO12_CUDA_STREAMS must be an integer from 1 to 16, got '") + env + "'");
  return static_cast<int>(v);
}

// YOLO12_CONV_TUNE: "1" turns kernel tuning on (as ExecutorConfig::tune_kernels does), "0" or unset
// leaves the config's choice.
bool tuning_from_env() { return env_switch("YOLO12_CONV_TUNE"); }

// The tune cache's path where tuning is on: ExecutorConfig::tune_cache, else YOLO12_CONV_TUNE_CACHE, else
// none. (The option turns tuning on, DetectorOptions::tune_cache; the environment variable does not.)
std::string tune_cache_path(const ExecutorConfig& cfg) {
  if (!cfg.tune_cache.empty()) return cfg.tune_cache;
  const char* env = std::getenv("YOLO12_CONV_TUNE_CACHE");
  return env ? env : "";
}

// What a tuned choice depends on beyond the op (TuneCache's scope): the GPU model, its multiprocessors,
// the library version and the precision.
std::string tune_cache_scope(int device, bool fp16) {
  cudaDeviceProp prop{};
  YOLO12_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return TuneCache::printable(prop.name) + " sm" + std::to_string(prop.major) + std::to_string(prop.minor) + " " +
         std::to_string(prop.multiProcessorCount) + " SMs yolo12 " + version() + (fp16 ? " fp16" : " fp32");
}

std::string mib(std::size_t bytes) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << bytes / (1024.0 * 1024.0) << " MiB";
  return s.str();
}

template <typename T>
class ExecutorImpl final : public CudaExecutor {
 public:
  ExecutorImpl(std::shared_ptr<const DeviceWeights> weights, const model::ModelFile& file, const ExecutorConfig& cfg,
               cudaStream_t stream)
      : weights_(std::move(weights)), cfg_(cfg), stream_(stream) {
    if (cfg.max_batch < 1) throw OptionError("max_batch must be at least 1, got " + std::to_string(cfg.max_batch));
    tuning_ = cfg.tune_kernels || tuning_from_env();
    overlap_staging_ = env_switch("YOLO12_STAGING_OVERLAP");
    staging_halves_ = env_switch("YOLO12_STAGING_HALVES", true);
    (void)staging_spin();  // YOLO12_STAGING_SPIN_US, read when a staging pool is made: a bad value fails here
    const std::string cache_path = tuning_ ? tune_cache_path(cfg) : std::string();
    if (!cache_path.empty())  // read now: a file that is not a tune cache fails the construction
      tune_cache_ = std::make_unique<TuneCache>(cache_path,
                                                tune_cache_scope(weights_->device, std::is_same<T, __half>::value));
    std::vector<int> widened;
    graph_ = network_graph(file.header(), cfg.input_h, cfg.input_w, weights_->padded_channels, &widened);
    // The stem and the conv after it as one op (conv_stem_pair.cuh), for fp16 under the conv variant f16_stem_pair,
    // where the kernel takes the channel counts (yolo12n and s; m..x keep the two convs);
    // a bottleneck's two 3x3 convs as one op (conv_halo_pair.cuh), for fp16 under the conv variant f16_halo_pair, where
    // the kernel takes the channel counts (8-32);
    // the Detect head's class branches as one op each (conv_dw_branch.cuh), for fp16 under the conv variant
    // f16_dw_branch, where the kernel takes the channel counts;
    // chains of 1x1 convs as one op each (conv_chain.cuh), for fp16 under the conv variant conv_chain. The weights are
    // those of the links (the passes change no tensor), so the packing above does not depend on them.
    const auto kernel_takes = [](const graph::ConvAttrs& a, const graph::ConvAttrs& b) {
      return conv_detail::stem_pair_channels(a.c_in, a.c_out, b.c_out);
    };
    const int pairs = std::is_same<T, __half>::value && conv_detail::conv_variants().f16_stem_pair
                          ? graph::fuse_stride2_pairs(graph_, kernel_takes)
                          : 0;
    const auto halo_pair_takes = [](const graph::ConvAttrs& a, const graph::ConvAttrs& b) {
      return conv_detail::halo_pair_channels(a.c_in, a.c_out, b.c_out);
    };
    const int halo_pairs = std::is_same<T, __half>::value && conv_detail::conv_variants().f16_halo_pair
                               ? graph::fuse_stride1_pairs(graph_, halo_pair_takes)
                               : 0;
    const auto dw_branch_takes = [](const std::vector<graph::ConvAttrs>& l) {
      return l.size() == 5 && conv_detail::dw_branch_channels(l[0].c_in, l[1].c_out, l[3].c_out, l[4].c_out);
    };
    const int branches = std::is_same<T, __half>::value && conv_detail::conv_variants().f16_dw_branch
                             ? graph::fuse_dw_branches(graph_, dw_branch_takes)
                             : 0;
    const int chains = std::is_same<T, __half>::value && conv_detail::conv_variants().conv_chain
                           ? graph::fuse_conv_chains(graph_, chain_limits())
                           : 0;
    plan_memory(network_streams());
    bind();
    make_streams();
    log::info("cuda executor " + std::to_string(cfg.input_h) + "x" + std::to_string(cfg.input_w) + " batch " +
              std::to_string(cfg.max_batch) + (std::is_same<T, float>::value ? " fp32" : " fp16") + ": weights " +
              mib(weights_->bytes) + ", activations " + mib(plan_.activations) + " (naive " +
              mib(plan_.activations_naive) + "), workspace " + mib(plan_.workspace) + ", " +
              std::to_string(plan_.ops) + " ops, " + std::to_string(plan_.values) + " values (" +
              std::to_string(widened.size()) + " widened to a multiple of 8 channels, " + std::to_string(chains) +
              " conv chains, " + std::to_string(pairs) + " stride-2 pairs, " + std::to_string(halo_pairs) +
              " stride-1 pairs, " + std::to_string(branches) + " class branches), " +
              std::to_string(sched_.streams) + " stream(s)");
    for (cudaEvent_t& e : ev_) YOLO12_CUDA_CHECK(cudaEventCreate(&e));
  }

  ~ExecutorImpl() override {
    cudaSetDevice(weights_->device);
    cudaStreamSynchronize(stream_);  // nothing of ours may still be running when the buffers go
    drop_graphs();
    for (cudaEvent_t e : ev_)
      if (e) cudaEventDestroy(e);
    for (cudaEvent_t e : op_ev_)
      if (e) cudaEventDestroy(e);
    for (cudaEvent_t e : join_ev_)
      if (e) cudaEventDestroy(e);
    for (cudaStream_t st : side_)
      if (st) cudaStreamDestroy(st);
  }

  ExecutorCaps caps() const override { return ExecutorCaps{true, true}; }
  const graph::Graph& graph() const override { return graph_; }
  int max_batch() const override { return cfg_.max_batch; }
  const MemoryPlan& plan() const override { return plan_; }
  const std::vector<Step>& network() const override { return steps_; }
  cudaStream_t stream() const override { return stream_; }

  void tune(int batch) override {
    if (!tuning_ || batch < 1 || batch > cfg_.max_batch || tuned_.count(batch)) return;
    YOLO12_CUDA_CHECK(cudaSetDevice(weights_->device));
    const auto start = std::chrono::steady_clock::now();
    int convs = 0, cached = 0;
    for (Step& step : steps_) {
      if (!step.tune) continue;
      const Step::Tuned t = step.tune(batch, stream_, tune_cache_.get());
      const std::size_t open = step.label.rfind('[');
      step.label = (open == std::string::npos ? step.label + " " : step.label.substr(0, open)) + "[" + t.plan +
                   (t.cached ? " cached]" : " tuned]");
      ++convs;
      cached += t.cached ? 1 : 0;
    }
    tuned_.insert(batch);
    if (tune_cache_ && tune_cache_->dirty() && !tune_cache_->save())
      log::warn("cuda executor: could not write the tune cache " + tune_cache_->path() +
                " (the tuned kernels are used; the next start-up tunes again)");
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    log::info("cuda executor: tuned the kernels of " + std::to_string(convs) + " convs for batch " +
              std::to_string(batch) + " in " + std::to_string(static_cast<int>(ms)) + " ms" +
              (tune_cache_ ? ", " + std::to_string(cached) + " from the cache " + tune_cache_->path() : std::string()));
  }

  void run(const ExecutorRun& r) override {
    YOLO12_CUDA_CHECK(cudaSetDevice(weights_->device));
    if (r.batch < 1 || r.batch > cfg_.max_batch)
      throw InputError("CUDA executor: batch " + std::to_string(r.batch) + " outside 1.." +
                       std::to_string(cfg_.max_batch));
    if (r.images && r.geometry && r.detections && !r.input && !r.raw) {
      detect(r);
    } else if (r.input && r.raw && !r.images && !r.detections) {
      forward_raw(r.input, r.batch, r.raw);
    } else {
      throw InputError("CUDA executor: run() takes images and returns detections, or a tensor and returns the raw head");
    }
  }

 private:
  struct GraphSlot {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaGraphNode_t h2d = nullptr;  // the staging copy, resized per call
  };

  std::shared_ptr<const DeviceWeights> weights_;
  ExecutorConfig cfg_;
  cudaStream_t stream_;
  graph::Graph graph_;
  MemoryPlan plan_;
  DeviceBuffer arena_;
  std::vector<std::size_t> value_offset_;  // bytes into the arena per value
  std::vector<Step> steps_;                // the bound network ops
  std::unique_ptr<DetectHead<T>> head_;
  PinnedBuffer staging_host_;
  DeviceBuffer staging_dev_;
  std::size_t staged_bytes_ = 0;              // the packed part of the block
  std::size_t graph_copy_from_ = 0;           // the graph's staging copy covers [graph_copy_from_, staged_bytes_)
  bool overlap_staging_ = false;              // YOLO12_STAGING_OVERLAP: copy the block's ranges while packing
  bool staging_halves_ = true;                // YOLO12_STAGING_HALVES: even-factor reductions packed resized
  std::vector<PinnedCopy> pinned_copies_;     // images in page-locked memory, copied before the graph
  DeviceBuffer raw_in_, raw_out_;  // the parity path's buffers, made on its first use
  std::vector<GraphSlot> graphs_;  // index batch - 1
  cudaEvent_t ev_[4] = {};
  // The multi-stream schedule of the network (graph/schedule.hpp): stream 0 is the caller's stream,
  // side_[s - 1] stream s (made here, destroyed here); op_ev_[i] is recorded after op i where a later
  // op on another stream waits for it; join_ev_[0] forks the side streams, join_ev_[s] joins stream s.
  graph::Schedule sched_;
  std::vector<cudaStream_t> side_;
  std::vector<cudaEvent_t> op_ev_, join_ev_;
  bool tuning_ = false;    // tune() times the convs' kernels (ExecutorConfig::tune_kernels, YOLO12_CONV_TUNE)
  std::set<int> tuned_;    // the batches tune() has run for
  std::unique_ptr<TuneCache> tune_cache_;  // ExecutorConfig::tune_cache / YOLO12_CONV_TUNE_CACHE, or none

  T* value_ptr(int v) const { return arena_.as<T>(value_offset_[static_cast<std::size_t>(v)]); }
  int raw_elems(int batch) const { return batch * graph_.head.raw_channels() * graph_.head.raw_anchors(); }

  void plan_memory(int streams) {
    const graph::Graph& g = graph_;
    const int nv = static_cast<int>(g.values.size());
    // The input lives from before op 0 (the preprocess writes it) to its last reader; the outputs to
    // the head, after the last op.
    const std::vector<graph::Lifetime> life = graph::value_lifetimes(g);
    std::vector<std::size_t> size(nv, 0);
    for (int v = 0; v < nv; ++v) {
      if (life[v].first == graph::Lifetime::kUnused) continue;
      const graph::Value& val = g.values[v];
      size[v] = align_up(sizeof(T) * cfg_.max_batch * val.c * val.h * val.w, kAlign);
    }
    // Values that two streams may use at once never share bytes (plan_concurrent); one stream: the
    // serial plan_arena.
    graph::ConcurrentPlan arena = graph::plan_concurrent(g, size, streams);
    value_offset_ = arena.layout.offset;
    sched_ = std::move(arena.schedule);
    plan_.activations = arena.bytes;
    plan_.activations_naive = arena.naive_bytes;
    plan_.weights = weights_->bytes;
    plan_.values = nv;
    plan_.ops = static_cast<int>(g.ops.size());
    arena_ = DeviceBuffer(std::max<std::size_t>(arena.bytes, kAlign));
  }

  // Every op through its file's bind (one visit), then the head.
  void bind() {
    for (const graph::Op& op : graph_.ops) {
      const BindContext<T> ctx{graph_, arena_.as<char>(), value_offset_, *weights_, cfg_.max_batch, op.name};
      steps_.push_back(bind_op<T>(op, ctx));
    }
    const std::string head_name = "head";
    head_ = std::make_unique<DetectHead<T>>(
        graph_.head, BindContext<T>{graph_, arena_.as<char>(), value_offset_, *weights_, cfg_.max_batch, head_name},
        cfg_.nms);
    plan_.workspace = head_->workspace_bytes();
  }

  void forward_raw(const float* nchw, int batch, float* out) {
    const std::size_t in_elems = static_cast<std::size_t>(batch) * 3 * cfg_.input_h * cfg_.input_w;
    tune(batch);  // before the input is written: tuning overwrites the arena
    if (!raw_in_.get()) {
      raw_in_ = DeviceBuffer(sizeof(float) * cfg_.max_batch * 3 * cfg_.input_h * cfg_.input_w);
      raw_out_ = DeviceBuffer(sizeof(float) * raw_elems(cfg_.max_batch));
    }
    YOLO12_CUDA_CHECK(cudaMemcpyAsync(raw_in_.get(), nchw, sizeof(float) * in_elems, cudaMemcpyHostToDevice, stream_));
    NchwToNhwcParams<T> cast;
    cast.x = raw_in_.as<float>();
    cast.y = value_ptr(graph::Graph::kInputValue);
    cast.ldy = graph_.values[graph::Graph::kInputValue].c;
    cast.batch = batch;
    cast.c = 3;
    cast.h = cfg_.input_h;
    cast.w = cfg_.input_w;
    nchw_to_nhwc<T>(cast, stream_);
    enqueue_network(batch);
    head_->enqueue_raw(batch, raw_out_.as<float>(), stream_);
    YOLO12_CUDA_CHECK(cudaMemcpyAsync(out, raw_out_.get(), sizeof(float) * raw_elems(batch), cudaMemcpyDeviceToHost,
                                      stream_));
    YOLO12_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void detect(const ExecutorRun& r) {
    stage_images(r);
    GraphSlot& slot = graph_for(r.batch);
    YOLO12_CUDA_CHECK(cudaGraphExecMemcpyNodeSetParams1D(
        slot.exec, slot.h2d, staging_dev_.as<unsigned char>() + graph_copy_from_,
        staging_host_.as<unsigned char>() + graph_copy_from_, staged_bytes_ - graph_copy_from_, cudaMemcpyHostToDevice));
    copy_pinned_images();
    YOLO12_CUDA_CHECK(cudaGraphLaunch(slot.exec, stream_));
    YOLO12_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (r.device_times) {
      // Stage times are informative only: a failed query must not cost the detections.
      float ms[3] = {0.f, 0.f, 0.f};
      for (int i = 0; i < 3; ++i)
        if (cudaEventElapsedTime(&ms[i], ev_[i], ev_[i + 1]) != cudaSuccess) {
          (void)cudaGetLastError();
          ms[0] = ms[1] = ms[2] = 0.f;
          break;
        }
      *r.device_times = StageTimes{ms[0], ms[1], ms[2]};
    }
    head_->read(r.batch, r.detections);
  }

  // Packs the images into the pinned staging block (growing it, and dropping the graphs that
  // captured the old one, when it is too small).
  void stage_images(const ExecutorRun& r) {
    const std::vector<ImageView> images(r.images, r.images + r.batch);
    const std::vector<pre::LetterboxParams> geometry(r.geometry, r.geometry + r.batch);
    for (const auto& gm : geometry)
      if (gm.dst_w != cfg_.input_w || gm.dst_h != cfg_.input_h)
        throw InputError("letterbox target " + std::to_string(gm.dst_w) + "x" + std::to_string(gm.dst_h) +
                         " differs from the executor's input " + std::to_string(cfg_.input_w) + "x" +
                         std::to_string(cfg_.input_h));
    const std::size_t need = preprocess_staging_bytes(images, geometry);
    if (need > staging_host_.bytes()) {
      YOLO12_CUDA_CHECK(cudaStreamSynchronize(stream_));
      drop_graphs();
      const std::size_t cap = align_up(need + need / 4, 1 << 20);
      staging_host_ = PinnedBuffer(cap);
      staging_dev_ = DeviceBuffer(cap);
    }
    std::vector<PixelSource> sources(images.size());
    for (std::size_t i = 0; i < images.size(); ++i) sources[i] = locate_pixels(images[i], weights_->device);
    // YOLO12_STAGING_OVERLAP: each range of the block but the last goes to the device as soon as it is packed, on
    // the executor's stream (so before the graph), while the later ones are still being packed; the graph's staging
    // copy takes the last range. Off: the graph copies the whole packed part.
    StageOptions options;
    options.halves = staging_halves_;
    graph_copy_from_ = 0;
    if (overlap_staging_) {
      options.band_bytes = kMinStagingBand;
      options.bands = kStagingBands;
      options.ready = [this](std::size_t begin, std::size_t end, bool last) {
        if (last) {
          graph_copy_from_ = begin;
          return;
        }
        YOLO12_CUDA_CHECK(cudaMemcpyAsync(staging_dev_.as<unsigned char>() + begin,
                                          staging_host_.as<unsigned char>() + begin, end - begin,
                                          cudaMemcpyHostToDevice, stream_));
      };
    }
    StagedBatch staged = preprocess_stage(images, geometry, sources, staging_host_.get(), options);
    staged_bytes_ = staged.packed_bytes;
    pinned_copies_ = std::move(staged.pinned);
  }

  // The rows of the images in page-locked memory, straight from it into the device block, before the
  // graph (whose staging copy covers only the packed part) runs on the same stream.
  void copy_pinned_images() {
    for (const PinnedCopy& c : pinned_copies_)
      YOLO12_CUDA_CHECK(cudaMemcpy2DAsync(staging_dev_.as<unsigned char>() + c.dst_offset, c.row_bytes, c.src,
                                          c.src_pitch, c.row_bytes, static_cast<std::size_t>(c.rows),
                                          cudaMemcpyHostToDevice, stream_));
  }

  void enqueue_preprocess(int batch) {
    YOLO12_CUDA_CHECK(cudaMemcpyAsync(staging_dev_.get(), staging_host_.get(), staged_bytes_, cudaMemcpyHostToDevice,
                                      stream_));
    PreprocessParams<T> p;
    p.block = staging_dev_.as<unsigned char>();
    p.batch = batch;
    p.h = cfg_.input_h;
    p.w = cfg_.input_w;
    p.y = value_ptr(graph::Graph::kInputValue);
    p.ldy = graph_.values[graph::Graph::kInputValue].c;
    preprocess_letterbox<T>(p, stream_);
  }

  void make_streams() {
    side_.assign(static_cast<std::size_t>(sched_.streams - 1), nullptr);
    for (cudaStream_t& st : side_) YOLO12_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    op_ev_.assign(steps_.size(), nullptr);
    for (std::size_t i = 0; i < steps_.size(); ++i)
      if (sched_.signals[i]) YOLO12_CUDA_CHECK(cudaEventCreateWithFlags(&op_ev_[i], cudaEventDisableTiming));
    join_ev_.assign(static_cast<std::size_t>(sched_.streams), nullptr);
    for (cudaEvent_t& e : join_ev_) YOLO12_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }

  cudaStream_t stream_of(int s) const { return s == 0 ? stream_ : side_[static_cast<std::size_t>(s - 1)]; }

  // The network on the schedule's streams: the side streams fork from the caller's stream and join it
  // again at the end, so that to the caller (and to a graph captured on its stream) this is one span
  // of work. The same in a capture and in the parity path's plain launches.
  void enqueue_network(int batch) override {
    if (sched_.streams == 1) {
      for (const Step& step : steps_) step.run(batch, stream_);
      return;
    }
    YOLO12_CUDA_CHECK(cudaEventRecord(join_ev_[0], stream_));
    for (cudaStream_t st : side_) YOLO12_CUDA_CHECK(cudaStreamWaitEvent(st, join_ev_[0], 0));
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      const cudaStream_t st = stream_of(sched_.stream[i]);
      for (int d : sched_.waits[i]) YOLO12_CUDA_CHECK(cudaStreamWaitEvent(st, op_ev_[static_cast<std::size_t>(d)], 0));
      steps_[i].run(batch, st);
      if (sched_.signals[i]) YOLO12_CUDA_CHECK(cudaEventRecord(op_ev_[i], st));
    }
    for (std::size_t s = 1; s < join_ev_.size(); ++s) {
      YOLO12_CUDA_CHECK(cudaEventRecord(join_ev_[s], side_[s - 1]));
      YOLO12_CUDA_CHECK(cudaStreamWaitEvent(stream_, join_ev_[s], 0));
    }
  }

  void drop_graphs() {
    for (GraphSlot& s : graphs_) {
      if (s.exec) cudaGraphExecDestroy(s.exec);
      if (s.graph) cudaGraphDestroy(s.graph);
      s = GraphSlot{};
    }
  }

  // The whole inference for `batch` images as one graph, captured on first use: H2D of the staging
  // block, letterbox, network, the head's decode + NMS and the D2H of the kept boxes.
  GraphSlot& graph_for(int batch) {
    if (graphs_.size() < static_cast<std::size_t>(cfg_.max_batch)) graphs_.resize(cfg_.max_batch);
    GraphSlot& slot = graphs_[batch - 1];
    if (slot.exec) return slot;
    tune(batch);  // outside the capture; the graph's launches then take the tuned plans
    slot.graph = capture_graph(stream_, [&] {
      YOLO12_CUDA_CHECK(cudaEventRecordWithFlags(ev_[0], stream_, cudaEventRecordExternal));
      enqueue_preprocess(batch);
      YOLO12_CUDA_CHECK(cudaEventRecordWithFlags(ev_[1], stream_, cudaEventRecordExternal));
      enqueue_network(batch);
      YOLO12_CUDA_CHECK(cudaEventRecordWithFlags(ev_[2], stream_, cudaEventRecordExternal));
      head_->enqueue_detect(batch, stream_);
      YOLO12_CUDA_CHECK(cudaEventRecordWithFlags(ev_[3], stream_, cudaEventRecordExternal));
    });
    // Find the staging copy: the one host-to-device memcpy node.
    std::size_t count = 0;
    YOLO12_CUDA_CHECK(cudaGraphGetNodes(slot.graph, nullptr, &count));
    std::vector<cudaGraphNode_t> nodes(count);
    YOLO12_CUDA_CHECK(cudaGraphGetNodes(slot.graph, nodes.data(), &count));
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type;
      YOLO12_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
      if (type != cudaGraphNodeTypeMemcpy) continue;
      cudaMemcpy3DParms mp = {};
      YOLO12_CUDA_CHECK(cudaGraphMemcpyNodeGetParams(node, &mp));
      if (mp.dstPtr.ptr == staging_dev_.get()) slot.h2d = node;
    }
    if (!slot.h2d) {
      cudaGraphDestroy(slot.graph);
      slot.graph = nullptr;
      throw CudaError("CUDA backend: the captured inference graph has no staging copy node");
    }
    YOLO12_CUDA_CHECK(cudaGraphInstantiate(&slot.exec, slot.graph, 0));
    return slot;
  }
};

}  // namespace

graph::Graph network_graph(const nlohmann::json& header, int input_h, int input_w) {
  return network_graph(header, input_h, input_w, conv_detail::conv_variants().pad_channels);
}

graph::Graph network_graph(const nlohmann::json& header, int input_h, int input_w, bool pad,
                           std::vector<int>* widened) {
  graph::Graph g = graph::build_graph(header, input_h, input_w);
  std::vector<int> w = pad ? graph::pad_channels(g) : std::vector<int>();
  if (widened) *widened = std::move(w);
  return g;
}

DeviceWeights::~DeviceWeights() {
  if (data) cudaFree(data);
}

std::shared_ptr<const DeviceWeights> upload_weights(const model::ModelFile& file, const graph::Graph& graph,
                                                    Precision precision, int device) {
  return upload_weights([&file](const std::string& name) { return file.tensor_f32(name); }, graph, precision, device);
}

std::shared_ptr<const DeviceWeights> upload_weights(const TensorSource& tensor, const graph::Graph& graph,
                                                    Precision precision, int device) {
  YOLO12_CUDA_CHECK(cudaSetDevice(device));
  auto w = std::make_shared<DeviceWeights>();
  w->precision = precision;
  w->device = device;
  const std::size_t elem = precision == Precision::Fp16 ? sizeof(__half) : sizeof(float);
  // First pass: offsets. Packed conv weights (T), then fp32 bias / gamma, each 256-byte aligned. A widened
  // conv (graph::pad_channels) reserves its widened sizes; its tensors hold tensor_c_out() channels.
  struct Item {
    std::string name;
    const graph::ConvOp* conv;
    bool packed;        // the conv's weight (T, packed), else its bias or gamma (fp32 vector)
    std::size_t bytes;  // reserved
  };
  std::vector<Item> items;
  std::size_t top = 0;
  auto place = [&](const std::string& name, std::size_t bytes, const graph::ConvOp* conv, bool packed) {
    if (name.empty() || w->offsets.count(name)) return;
    w->offsets[name] = top;
    top = align_up(top + bytes, kAlign);
    items.push_back({name, conv, packed, bytes});
  };
  for (const graph::Op& op : graph.ops)
    for (const graph::ConvOp* c : graph::convs_of(op)) {  // a conv chain's links too
      w->padded_channels = w->padded_channels || c->widened();
      place(c->weight, conv_packed_weight_elems(conv_shape(graph, *c, 1)) * elem, c, true);
      place(c->bias, sizeof(float) * c->attrs.c_out, c, false);
      place(c->gamma, sizeof(float) * c->attrs.c_out, c, false);
    }
  // Zero-filled: the packing's padding and the widened channels' bias and gamma stay 0.
  std::vector<unsigned char> host(std::max<std::size_t>(top, kAlign), 0);
  for (const Item& it : items) {
    const std::vector<float> src = tensor(it.name);
    unsigned char* dst = host.data() + w->offsets[it.name];
    const graph::ConvOp& c = *it.conv;
    const std::size_t want = it.packed ? static_cast<std::size_t>(c.tensor_c_out()) * (c.tensor_c_in() / c.attrs.groups) *
                                             c.attrs.k * c.attrs.k
                                       : static_cast<std::size_t>(c.tensor_c_out());
    if (src.size() != want || (!it.packed && src.size() * sizeof(float) > it.bytes))
      throw ModelError("CUDA backend: tensor '" + it.name + "' holds " + std::to_string(src.size()) +
                       " numbers, its conv needs " + std::to_string(want));
    if (it.packed) {
      const ConvShape s = conv_shape(graph, c, 1);
      if (precision == Precision::Fp16)
        conv_pack_weights<__half>(s, src.data(), reinterpret_cast<__half*>(dst), c.tensor_c_out(), c.tensor_c_in());
      else
        conv_pack_weights<float>(s, src.data(), reinterpret_cast<float*>(dst), c.tensor_c_out(), c.tensor_c_in());
    } else {
      std::memcpy(dst, src.data(), src.size() * sizeof(float));
    }
  }
  w->bytes = host.size();
  YOLO12_CUDA_CHECK(cudaMalloc(&w->data, w->bytes));
  YOLO12_CUDA_CHECK(cudaMemcpy(w->data, host.data(), w->bytes, cudaMemcpyHostToDevice));
  return w;
}

std::unique_ptr<CudaExecutor> make_executor(std::shared_ptr<const DeviceWeights> weights, const model::ModelFile& file,
                                            const ExecutorConfig& cfg, cudaStream_t stream) {
  YOLO12_CUDA_CHECK(cudaSetDevice(weights->device));
  if (weights->precision == Precision::Fp16)
    return std::make_unique<ExecutorImpl<__half>>(std::move(weights), file, cfg, stream);
  return std::make_unique<ExecutorImpl<float>>(std::move(weights), file, cfg, stream);
}

}  // namespace yolo12::cuda

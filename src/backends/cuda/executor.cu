// src/backends/cuda/executor.cu - weight upload, memory plan, op dispatch and CUDA-graph replay (see executor.cuh).
#include "executor.cuh"

#include <algorithm>
#include <cstring>
#include <functional>
#include <sstream>
#include <type_traits>

#include "attention.cuh"
#include "common.cuh"
#include "conv.cuh"
#include "core/half.hpp"
#include "core/log.hpp"
#include "detect.cuh"
#include "elementwise.cuh"
#include "graph/graph.hpp"
#include "graph/memory_plan.hpp"
#include "model/model_file.hpp"
#include "preprocess.cuh"

namespace yolo12::cuda {
namespace {

constexpr std::size_t kAlign = 256;

std::string mib(std::size_t bytes) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << bytes / (1024.0 * 1024.0) << " MiB";
  return s.str();
}

ConvShape conv_shape(const graph::Graph& g, const graph::ConvOp& c, int batch) {
  const graph::Value& in = g.values[c.in.value];
  const graph::Value& out = g.values[c.out.value];
  ConvShape s;
  s.batch = batch;
  s.h = in.h;
  s.w = in.w;
  s.c_in = c.c_in;
  s.ho = out.h;
  s.wo = out.w;
  s.c_out = c.c_out;
  s.k = c.k;
  s.stride = c.stride;
  s.pad = c.pad;
  s.groups = c.groups;
  s.dilation = c.dilation;
  return s;
}

// The launch of a network step whose kernel parameters carry the batch in `batch`: the parameters
// bound at build time, with the batch of each inference filled in.
template <typename P>
std::function<void(int, cudaStream_t)> with_batch(const P& p, void (*launch)(const P&, cudaStream_t)) {
  return [p, launch](int batch, cudaStream_t stream) {
    P q = p;
    q.batch = batch;
    launch(q, stream);
  };
}

[[noreturn]] void cannot_run(const graph::Op& op, const std::string& what) {
  throw ModelError("CUDA backend: op '" + op.name + "': " + what +
                   " is not supported by the CUDA kernels; run this model with device cpu");
}

template <typename T>
class ExecutorImpl final : public CudaExecutor {
 public:
  ExecutorImpl(std::shared_ptr<const DeviceWeights> weights, const model::ModelFile& file, const ExecutorConfig& cfg,
               cudaStream_t stream)
      : weights_(std::move(weights)), cfg_(cfg), stream_(stream) {
    if (cfg.max_batch < 1) throw OptionError("max_batch must be at least 1, got " + std::to_string(cfg.max_batch));
    graph_ = graph::build_graph(file.header(), cfg.input_h, cfg.input_w);
    const graph::Graph& g = graph_;
    if (g.output_value < 0) throw ModelError("CUDA backend: the graph has no Detect output");
    plan_memory();
    check_and_bind_ops();
    plan_workspace();
    log::info("cuda executor " + std::to_string(cfg.input_h) + "x" + std::to_string(cfg.input_w) + " batch " +
              std::to_string(cfg.max_batch) + (std::is_same<T, float>::value ? " fp32" : " fp16") + ": weights " +
              mib(weights_->bytes) + ", activations " + mib(plan_.activations) + " (naive " +
              mib(plan_.activations_naive) + "), workspace " + mib(plan_.workspace) + ", " +
              std::to_string(plan_.ops) + " ops, " + std::to_string(plan_.values) + " values");
    YOLO12_CUDA_CHECK(cudaEventCreate(&ev_[0]));
    YOLO12_CUDA_CHECK(cudaEventCreate(&ev_[1]));
    YOLO12_CUDA_CHECK(cudaEventCreate(&ev_[2]));
    YOLO12_CUDA_CHECK(cudaEventCreate(&ev_[3]));
  }

  ~ExecutorImpl() override {
    cudaSetDevice(weights_->device);
    cudaStreamSynchronize(stream_);  // nothing of ours may still be running when the buffers go
    drop_graphs();
    for (cudaEvent_t e : ev_)
      if (e) cudaEventDestroy(e);
  }

  ExecutorCaps caps() const override { return ExecutorCaps{true, true}; }
  const graph::Graph& graph() const override { return graph_; }
  int max_batch() const override { return cfg_.max_batch; }
  const MemoryPlan& plan() const override { return plan_; }
  const std::vector<Step>& network() const override { return steps_; }
  cudaStream_t stream() const override { return stream_; }

  void run(const ExecutorRun& r) override {
    YOLO12_CUDA_CHECK(cudaSetDevice(weights_->device));
    if (r.batch < 1 || r.batch > cfg_.max_batch)
      throw InputError("CUDA executor: batch " + std::to_string(r.batch) + " outside 1.." +
                       std::to_string(cfg_.max_batch));
    if (r.images && r.geometry && r.detections) {
      detect(r);
    } else if (r.input && r.raw && !r.images && !r.detections) {
      forward_raw(r.input, r.batch, r.raw);
    } else {
      throw InputError("CUDA executor: run() takes images and returns detections, or a tensor and returns the raw head");
    }
  }

 private:
  int channels() const { return 4 + graph_.nc; }

  void forward_raw(const float* nchw, int batch, float* out) {
    const std::size_t in_elems = static_cast<std::size_t>(batch) * 3 * cfg_.input_h * cfg_.input_w;
    const std::size_t out_elems = static_cast<std::size_t>(batch) * channels() * anchors_;
    if (!raw_in_.get()) {  // the parity path's own buffers, on first use
      raw_in_ = DeviceBuffer(sizeof(float) * cfg_.max_batch * 3 * cfg_.input_h * cfg_.input_w);
      raw_out_ = DeviceBuffer(sizeof(float) * cfg_.max_batch * channels() * anchors_);
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
    DetectParams<T> d = detect_params_;
    d.batch = batch;
    d.raw = raw_out_.as<float>();
    d.candidates = nullptr;
    detect_forward<T>(d, stream_);
    YOLO12_CUDA_CHECK(cudaMemcpyAsync(out, raw_out_.get(), sizeof(float) * out_elems, cudaMemcpyDeviceToHost, stream_));
    YOLO12_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void detect(const ExecutorRun& r) {
    const std::vector<ImageView> images(r.images, r.images + r.batch);
    const std::vector<pre::LetterboxParams> geometry(r.geometry, r.geometry + r.batch);
    stage_images(images, geometry);
    GraphSlot& slot = graph_for(r.batch);
    YOLO12_CUDA_CHECK(cudaGraphExecMemcpyNodeSetParams1D(slot.exec, slot.h2d, staging_dev_.get(), staging_host_.get(),
                                                         staged_bytes_, cudaMemcpyHostToDevice));
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
    read_detections(r.batch, r.detections);
  }

  void stage_images(const std::vector<ImageView>& images, const std::vector<pre::LetterboxParams>& geometry) {
    for (const auto& gm : geometry)
      if (gm.dst_w != cfg_.input_w || gm.dst_h != cfg_.input_h)
        throw InputError("letterbox target " + std::to_string(gm.dst_w) + "x" + std::to_string(gm.dst_h) +
                         " differs from the executor's input " + std::to_string(cfg_.input_w) + "x" +
                         std::to_string(cfg_.input_h));
    const std::size_t need = preprocess_staging_bytes(images, geometry);
    if (need > staging_host_.bytes()) {
      // Grow both copies (with headroom) and forget the graphs that captured the old addresses.
      YOLO12_CUDA_CHECK(cudaStreamSynchronize(stream_));
      drop_graphs();
      const std::size_t cap = align_up(need + need / 4, 1 << 20);
      staging_host_ = PinnedBuffer(cap);
      staging_dev_ = DeviceBuffer(cap);
    }
    staged_bytes_ = preprocess_stage(images, geometry, staging_host_.get());
  }

  void enqueue_preprocess(int batch) {
    YOLO12_CUDA_CHECK(cudaMemcpyAsync(staging_dev_.get(), staging_host_.get(), staged_bytes_, cudaMemcpyHostToDevice,
                                      stream_));
    enqueue_letterbox(batch);
  }

  void enqueue_network(int batch) {
    for (const Step& step : steps_) step.run(batch, stream_);
  }

  void enqueue_postprocess(int batch) {
    DetectParams<T> d = detect_params_;
    d.batch = batch;
    detect_forward<T>(d, stream_);
    YOLO12_CUDA_CHECK(cudaMemcpyAsync(out_host_.get(), out_dev_.get(), out_bytes(batch), cudaMemcpyDeviceToHost, stream_));
  }

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
  int anchors_ = 0;
  DeviceBuffer arena_;
  std::vector<std::size_t> value_offset_;  // bytes into the arena per value (ArenaPlan::kNone: outside)
  std::vector<Step> steps_;
  DetectParams<T> detect_params_;
  DeviceBuffer workspace_;  // detect workspace | class filter | kept boxes + counts
  PinnedBuffer out_host_;
  DeviceBuffer out_dev_;    // view into workspace_ is simpler to reason about as its own buffer
  PinnedBuffer staging_host_;
  DeviceBuffer staging_dev_;
  std::size_t staged_bytes_ = 0;
  DeviceBuffer raw_in_, raw_out_;
  std::vector<GraphSlot> graphs_;  // index batch - 1
  cudaEvent_t ev_[4] = {};


  T* value_ptr(int v) const { return arena_.as<T>(value_offset_[v]); }
  T* slice_ptr(const graph::ValueRef& r) const { return value_ptr(r.value) + r.c0; }
  int ld_of(const graph::ValueRef& r) const { return graph_.values[r.value].c; }
  const float* weight_f32(const std::string& name) const { return static_cast<const float*>(weight_ptr(name)); }
  const void* weight_ptr(const std::string& name) const {
    auto it = weights_->offsets.find(name);
    if (it == weights_->offsets.end())
      throw ModelError("CUDA backend: tensor '" + name + "' was not uploaded (the model's graph changed?)");
    return static_cast<const char*>(weights_->data) + it->second;
  }
  std::size_t out_bytes(int batch) const {
    return align_up(sizeof(int) * cfg_.max_batch, kAlign) + sizeof(float) * 6 * cfg_.nms.max_det * batch;
  }

  void plan_memory() {
    const graph::Graph& g = graph_;
    const int nv = static_cast<int>(g.values.size());
    // The input lives from before op 0 (the preprocess writes it) to its last reader.
    const std::vector<graph::Lifetime> life = graph::value_lifetimes(g);
    // The Detect output (the fp32 raw head) is kept outside the arena.
    std::vector<std::size_t> size(nv, 0);
    for (int v = 0; v < nv; ++v) {
      if (v == g.output_value || life[v].first == graph::Lifetime::kUnused) continue;
      const graph::Value& val = g.values[v];
      size[v] = align_up(sizeof(T) * cfg_.max_batch * val.c * val.h * val.w, kAlign);
    }
    const graph::ArenaPlan arena = graph::plan_arena(life, size);
    value_offset_ = arena.offset;
    plan_.activations = arena.bytes;
    plan_.activations_naive = arena.naive_bytes;
    plan_.weights = weights_->bytes;
    plan_.values = nv;
    plan_.ops = static_cast<int>(g.ops.size());
    arena_ = DeviceBuffer(std::max<std::size_t>(arena.bytes, kAlign));
  }

  void check_and_bind_ops() {
    const graph::Graph& g = graph_;
    for (const graph::Op& op : g.ops) {
      switch (op.kind) {
        case graph::OpKind::Conv: {
          const graph::ConvOp& c = op.conv;
          const ConvShape s = conv_shape(g, c, cfg_.max_batch);
          if (!conv_can_implement(s)) {
            std::ostringstream m;
            m << "conv " << s.c_in << "->" << s.c_out << " k" << s.k << " s" << s.stride << " g" << s.groups << " d"
              << s.dilation << " on " << s.h << "x" << s.w;
            cannot_run(op, m.str());
          }
          ConvParams<T> p;
          p.s = s;
          p.x = slice_ptr(c.in);
          p.ldx = ld_of(c.in);
          p.w = static_cast<const T*>(weight_ptr(c.weight));
          p.bias = weight_f32(c.bias);
          p.gamma = c.gamma.empty() ? nullptr : weight_f32(c.gamma);
          if (c.residual.valid()) {
            p.residual = slice_ptr(c.residual);
            p.ldr = ld_of(c.residual);
          }
          p.y = slice_ptr(c.out);
          p.ldy = ld_of(c.out);
          p.silu = c.act == graph::Act::SiLU;
          std::ostringstream label;
          label << "conv " << s.k << "x" << s.k << "/" << s.stride << " " << s.c_in << "->" << s.c_out << " g"
                << s.groups << " " << s.h << "x" << s.w << "->" << s.ho << "x" << s.wo << (p.residual ? " +res" : "")
                << " [" << conv_algorithm_name(s, sizeof(T) == 2) << "]";
          const double in = 1.0 * s.h * s.w * s.c_in, out = 1.0 * s.ho * s.wo * s.c_out;
          const double macs_per_output = 1.0 * (s.c_in / s.groups) * s.k * s.k;
          steps_.push_back({[p](int batch, cudaStream_t st) {
                              ConvParams<T> q = p;
                              q.s.batch = batch;
                              conv2d_forward<T>(q, st);
                            },
                            label.str(), sizeof(T) * (in + out * (p.residual ? 2 : 1)),
                            sizeof(T) * s.c_out * macs_per_output, 2.0 * out * macs_per_output});
          break;
        }
        case graph::OpKind::Upsample: {
          const graph::UpsampleOp& u = op.upsample;
          const graph::Value& in = g.values[u.in.value];
          UpsampleNearestParams<T> p;
          p.x = slice_ptr(u.in);
          p.ldx = ld_of(u.in);
          p.y = slice_ptr(u.out);
          p.ldy = ld_of(u.out);
          p.h = in.h;
          p.w = in.w;
          p.c = u.in.c;
          p.factor = u.factor;
          if (u.factor < 1 || u.out.c != u.in.c) cannot_run(op, "upsample factor " + std::to_string(u.factor));
          steps_.push_back({with_batch(p, &upsample_nearest<T>),
                            "upsample x" + std::to_string(p.factor) + " " + std::to_string(p.c) + "ch " +
                                std::to_string(p.h) + "x" + std::to_string(p.w),
                            sizeof(T) * 1.0 * p.h * p.w * p.c * (1 + p.factor * p.factor)});
          break;
        }
        case graph::OpKind::MaxPool: {
          const graph::MaxPoolOp& m = op.maxpool;
          if (!max_pool_can_implement(m.k)) cannot_run(op, "max-pool k" + std::to_string(m.k));
          const graph::Value& in = g.values[m.in.value];
          MaxPoolParams<T> p;
          p.x = slice_ptr(m.in);
          p.ldx = ld_of(m.in);
          p.y = slice_ptr(m.out);
          p.ldy = ld_of(m.out);
          p.h = in.h;
          p.w = in.w;
          p.c = m.in.c;
          p.k = m.k;
          steps_.push_back({with_batch(p, &max_pool_same<T>),
                            "maxpool k" + std::to_string(p.k) + " " + std::to_string(p.c) + "ch " +
                                std::to_string(p.h) + "x" + std::to_string(p.w),
                            sizeof(T) * 2.0 * p.h * p.w * p.c});
          break;
        }
        case graph::OpKind::Copy: {
          const graph::CopyOp& c = op.copy;
          const graph::Value& in = g.values[c.in.value];
          ChannelCopyParams<T> p;
          p.x = slice_ptr(c.in);
          p.ldx = ld_of(c.in);
          p.y = slice_ptr(c.out);
          p.ldy = ld_of(c.out);
          p.pixels = in.h * in.w;
          p.c = c.in.c;
          steps_.push_back({with_batch(p, &channel_copy<T>),
                            "copy " + std::to_string(p.c) + "ch " + std::to_string(p.pixels) + "px",
                            sizeof(T) * 2.0 * p.pixels * p.c});
          break;
        }
        case graph::OpKind::Attention: {
          const graph::AttentionOp& a = op.attention;
          const graph::Value& qv = g.values[a.q.value];
          const int tokens = qv.h * qv.w;
          if (!area_attention_can_implement(tokens, a.area, a.heads, a.dqk, a.dv))
            cannot_run(op, "area attention with " + std::to_string(tokens) + " tokens, area " + std::to_string(a.area) +
                               ", " + std::to_string(a.heads) + " heads, dqk " + std::to_string(a.dqk) + ", dv " +
                               std::to_string(a.dv));
          AreaAttentionParams<T> p;
          p.q = slice_ptr(a.q);
          p.k = slice_ptr(a.k);
          p.v = slice_ptr(a.v);
          p.ldq = ld_of(a.q);
          p.ldk = ld_of(a.k);
          p.ldv = ld_of(a.v);
          p.q_head_stride = a.q_head_stride;
          p.k_head_stride = a.k_head_stride;
          p.v_head_stride = a.v_head_stride;
          p.out = slice_ptr(a.out);
          p.ldo = ld_of(a.out);
          if (a.v_image.valid()) {
            p.v_image = slice_ptr(a.v_image);
            p.ldvi = ld_of(a.v_image);
          }
          p.tokens = tokens;
          p.area = a.area;
          p.heads = a.heads;
          p.dqk = a.dqk;
          p.dv = a.dv;
          p.scale = a.scale;
          const double per_area = 1.0 * tokens / a.area;
          steps_.push_back({with_batch(p, &area_attention_forward<T>),
                            "attention " + std::to_string(tokens) + " tokens, area " + std::to_string(a.area) + ", " +
                                std::to_string(a.heads) + " heads, d " + std::to_string(a.dqk) + "/" +
                                std::to_string(a.dv),
                            sizeof(T) * 1.0 * tokens * a.heads * (a.dqk * 2 + a.dv * 2 + (p.v_image ? a.dv : 0)), 0,
                            2.0 * a.heads * a.area * per_area * per_area * (a.dqk + a.dv)});
          break;
        }
        case graph::OpKind::Detect: {
          const graph::DetectOp& d = op.detect;
          const int levels = static_cast<int>(d.box.size());
          if (!detect_can_implement(levels, d.reg_max, d.nc, cfg_.nms.max_det) || d.cls.size() != d.box.size() ||
              d.strides.size() != d.box.size())
            cannot_run(op, "Detect with " + std::to_string(levels) + " levels, reg_max " + std::to_string(d.reg_max) +
                               ", max_det " + std::to_string(cfg_.nms.max_det));
          DetectParams<T> p;
          p.nc = d.nc;
          p.reg_max = d.reg_max;
          p.levels = levels;
          anchors_ = 0;
          for (int l = 0; l < levels; ++l) {
            const graph::Value& bv = g.values[d.box[l].value];
            p.box[l] = slice_ptr(d.box[l]);
            p.ldb[l] = ld_of(d.box[l]);
            p.cls[l] = slice_ptr(d.cls[l]);
            p.ldc[l] = ld_of(d.cls[l]);
            p.h[l] = bv.h;
            p.w[l] = bv.w;
            p.stride[l] = static_cast<float>(d.strides[l]);
            anchors_ += bv.h * bv.w;
          }
          p.anchors = anchors_;
          p.conf = cfg_.nms.conf;
          p.iou = cfg_.nms.iou;
          p.max_det = cfg_.nms.max_det;
          p.max_nms = cfg_.nms.max_nms;
          p.agnostic = cfg_.nms.agnostic;
          detect_params_ = p;  // workspace pointers are set in plan_workspace()
          break;
        }
      }
    }
    if (anchors_ == 0) throw ModelError("CUDA backend: the graph has no Detect op");
  }

  void plan_workspace() {
    const int B = cfg_.max_batch;
    const std::size_t det_ws = detect_workspace_bytes(B, anchors_, cfg_.nms.max_nms);
    const std::size_t keep_bytes = align_up(static_cast<std::size_t>(graph_.nc), kAlign);
    workspace_ = DeviceBuffer(det_ws + keep_bytes);
    detect_params_.batch = B;  // the carve sizes its regions for this batch
    detect_workspace_carve<T>(detect_params_, workspace_.get());
    if (!cfg_.nms.classes.empty()) {
      std::vector<unsigned char> keep(static_cast<std::size_t>(graph_.nc), 0);
      for (int c : cfg_.nms.classes)
        if (c >= 0 && c < graph_.nc) keep[static_cast<std::size_t>(c)] = 1;
      unsigned char* dev_keep = workspace_.as<unsigned char>(det_ws);
      YOLO12_CUDA_CHECK(cudaMemcpy(dev_keep, keep.data(), keep.size(), cudaMemcpyHostToDevice));
      detect_params_.class_keep = dev_keep;
    }
    const std::size_t ob = out_bytes(B);
    out_dev_ = DeviceBuffer(ob);
    out_host_ = PinnedBuffer(ob);
    detect_params_.det_count = out_dev_.as<int>();
    detect_params_.dets = out_dev_.as<float>(align_up(sizeof(int) * B, kAlign));
    plan_.workspace = workspace_.bytes() + ob;
  }

  void enqueue_letterbox(int batch) {
    PreprocessParams<T> p;
    p.block = staging_dev_.as<unsigned char>();
    p.batch = batch;
    p.h = cfg_.input_h;
    p.w = cfg_.input_w;
    p.y = value_ptr(graph::Graph::kInputValue);
    p.ldy = graph_.values[graph::Graph::kInputValue].c;
    preprocess_letterbox<T>(p, stream_);
  }

  void drop_graphs() {
    for (GraphSlot& s : graphs_) {
      if (s.exec) cudaGraphExecDestroy(s.exec);
      if (s.graph) cudaGraphDestroy(s.graph);
      s = GraphSlot{};
    }
  }

  // The whole inference for `batch` images as one graph, captured on first use.
  GraphSlot& graph_for(int batch) {
    if (graphs_.size() < static_cast<std::size_t>(cfg_.max_batch)) graphs_.resize(cfg_.max_batch);
    GraphSlot& slot = graphs_[batch - 1];
    if (slot.exec) return slot;
    slot.graph = capture_graph(stream_, [&] {
      YOLO12_CUDA_CHECK(cudaEventRecordWithFlags(ev_[0], stream_, cudaEventRecordExternal));
      enqueue_preprocess(batch);
      YOLO12_CUDA_CHECK(cudaEventRecordWithFlags(ev_[1], stream_, cudaEventRecordExternal));
      enqueue_network(batch);
      YOLO12_CUDA_CHECK(cudaEventRecordWithFlags(ev_[2], stream_, cudaEventRecordExternal));
      enqueue_postprocess(batch);
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

  void read_detections(int batch, std::vector<Detection>* out) const {
    const int* counts = out_host_.as<int>();
    const float* dets = out_host_.as<float>(align_up(sizeof(int) * cfg_.max_batch, kAlign));
    for (int n = 0; n < batch; ++n) {
      const int k = std::min(counts[n], cfg_.nms.max_det);
      auto& v = out[static_cast<std::size_t>(n)];
      v.resize(static_cast<std::size_t>(std::max(k, 0)));
      for (int i = 0; i < k; ++i) {
        const float* r = dets + (static_cast<std::size_t>(n) * cfg_.nms.max_det + i) * 6;
        Detection& d = v[static_cast<std::size_t>(i)];
        d.box = Box{r[0], r[1], r[2], r[3]};
        d.score = r[4];
        d.class_id = static_cast<int>(r[5]);
      }
    }
  }
};

}  // namespace

DeviceWeights::~DeviceWeights() {
  if (data) cudaFree(data);
}

std::shared_ptr<const DeviceWeights> upload_weights(const model::ModelFile& file, const graph::Graph& graph,
                                                    Precision precision, int device) {
  YOLO12_CUDA_CHECK(cudaSetDevice(device));
  auto w = std::make_shared<DeviceWeights>();
  w->precision = precision;
  w->device = device;
  const std::size_t elem = precision == Precision::Fp16 ? sizeof(__half) : sizeof(float);
  // First pass: offsets. Packed conv weights (T), then fp32 bias / gamma, each 256-byte aligned.
  struct Item {
    std::string name;
    const graph::ConvOp* conv;  // nullptr: fp32 vector
  };
  std::vector<Item> items;
  std::size_t top = 0;
  auto place = [&](const std::string& name, std::size_t bytes, const graph::ConvOp* conv) {
    if (name.empty() || w->offsets.count(name)) return;
    w->offsets[name] = top;
    top = align_up(top + bytes, kAlign);
    items.push_back({name, conv});
  };
  for (const graph::Op& op : graph.ops) {
    if (op.kind != graph::OpKind::Conv) continue;
    const graph::ConvOp& c = op.conv;
    const ConvShape s = conv_shape(graph, c, 1);
    place(c.weight, conv_packed_weight_elems(s) * elem, &c);
    place(c.bias, sizeof(float) * c.c_out, nullptr);
    place(c.gamma, sizeof(float) * c.c_out, nullptr);
  }
  std::vector<unsigned char> host(std::max<std::size_t>(top, kAlign), 0);
  for (const Item& it : items) {
    const std::vector<float> src = file.tensor_f32(it.name);
    unsigned char* dst = host.data() + w->offsets[it.name];
    if (it.conv) {
      const ConvShape s = conv_shape(graph, *it.conv, 1);
      if (precision == Precision::Fp16) conv_pack_weights<__half>(s, src.data(), reinterpret_cast<__half*>(dst));
      else conv_pack_weights<float>(s, src.data(), reinterpret_cast<float*>(dst));
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

// src/backends/cuda/detect.cu - Detect decode, candidate sort and greedy NMS (see detect.cuh for the algorithm).
//
// Sizes that shaped the choices: at 640 there are A = 8400 anchors, so the decode is one thread per
// anchor and reads 64 box + 80 class values per thread (about 5 MB at batch 1 in fp32: a few us).
// With trained weights only tens to hundreds of anchors pass conf = 0.25, so the quadratic rank sort
// costs nothing; in the worst case (every anchor a candidate) it is 70 M key comparisons per image,
// about 0.1 ms on an H200, and it needs no temporary storage and no second pass.
#include "detect.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common.cuh"

namespace yolo12::cuda {
namespace {

constexpr int kDecodeThreads = 256;
constexpr int kSortThreads = 256;
constexpr int kNmsChunk = 256;  // candidates per NMS step = threads per NMS block
constexpr int kMaskWords = kNmsChunk / 32;
constexpr int kMaxRegMax = 64;
constexpr int kMaxDetLimit = 1024;  // keeps the NMS block under 48 KB of shared memory

template <typename T>
__global__ void detect_decode_kernel(DetectHeadParams<T> p) {
  const int n = blockIdx.y;
  const int a = blockIdx.x * blockDim.x + threadIdx.x;
  if (a >= p.anchors) return;

  // Which level this anchor is in, and its cell.
  int local = 0;
  const int level = anchor_level(p.h, p.w, p.levels, a, local);
  const int gy = local / p.w[level], gx = local % p.w[level];
  const long long pix = (static_cast<long long>(n) * p.h[level] + gy) * p.w[level] + gx;
  const T* box = p.box[level] + pix * p.ldb[level];  // (4 * reg_max)
  const T* cls = p.cls[level] + pix * p.ldc[level];  // (nc)

  // DFL: per side, softmax over the bins, then the expected bin index.
  float dist[4];
#pragma unroll
  for (int side = 0; side < 4; ++side) {
    const T* bins = box + side * p.reg_max;
    float m = to_f32(bins[0]);
    for (int i = 1; i < p.reg_max; ++i) m = fmaxf(m, to_f32(bins[i]));
    float sum = 0.f, acc = 0.f;
    for (int i = 0; i < p.reg_max; ++i) {
      const float e = expf(to_f32(bins[i]) - m);
      sum += e;
      acc += e * static_cast<float>(i);
    }
    dist[side] = acc / sum;
  }
  const float ax = gx + 0.5f, ay = gy + 0.5f, s = p.stride[level];
  const float x1 = ax - dist[0], y1 = ay - dist[1], x2 = ax + dist[2], y2 = ay + dist[3];
  // Explicitly rounded products: the candidates below must derive from exactly the values written to
  // the raw head (no multiply-add contraction across the two).
  const float cx = __fmul_rn(__fmul_rn(x1 + x2, 0.5f), s), cy = __fmul_rn(__fmul_rn(y1 + y2, 0.5f), s);
  const float bw = __fmul_rn(x2 - x1, s), bh = __fmul_rn(y2 - y1, s);

  const long long A = p.anchors;
  float* raw = p.raw ? p.raw + static_cast<long long>(n) * (4 + p.nc) * A + a : nullptr;  // column a
  if (raw) {
    raw[0] = cx;
    raw[A] = cy;
    raw[2 * A] = bw;
    raw[3 * A] = bh;
  }
  float best = -1.f;
  int best_c = 0;
  for (int c = 0; c < p.nc; ++c) {
    const float score = 1.f / (1.f + expf(-to_f32(cls[c])));
    if (raw) raw[(4 + c) * A] = score;
    if (score > best) {  // strict: the first maximum wins, as torch.max
      best = score;
      best_c = c;
    }
  }
  if (!p.candidates) return;
  if (!(best > p.conf)) return;
  if (p.class_keep && !p.class_keep[best_c]) return;
  const int slot = atomicAdd(&p.candidate_count[n], 1);
  DetectCandidate cand;
  // xywh -> xyxy exactly as Ultralytics' xywh2xyxy: centre -/+ half size.
  const float hw = __fdiv_rn(bw, 2.f), hh = __fdiv_rn(bh, 2.f);
  cand.x1 = __fsub_rn(cx, hw);
  cand.y1 = __fsub_rn(cy, hh);
  cand.x2 = __fadd_rn(cx, hw);
  cand.y2 = __fadd_rn(cy, hh);
  cand.score = best;
  cand.cls = best_c;
  cand.anchor = a;
  cand.pad = 0;
  p.candidates[static_cast<long long>(n) * A + slot] = cand;
}

// True when candidate (sa, aa) comes before (sb, ab): higher score first, then lower anchor.
__device__ __forceinline__ bool ranks_before(float sa, int aa, float sb, int ab) {
  return sa > sb || (sa == sb && aa < ab);
}

__global__ void rank_sort_candidates_kernel(const DetectCandidate* __restrict__ cand,  // (B, A)
                                            const int* __restrict__ count,            // (B)
                                            DetectCandidate* __restrict__ sorted,     // (B, ld_sorted)
                                            int anchors, int ld_sorted, int max_nms) {
  __shared__ float s_score[kSortThreads];
  __shared__ int s_anchor[kSortThreads];
  const int n = blockIdx.y;
  const int total = count[n];
  const int base_i = blockIdx.x * blockDim.x;
  if (base_i >= total) return;  // whole block idle (uniform branch)
  const DetectCandidate* c = cand + static_cast<long long>(n) * anchors;
  const int i = base_i + threadIdx.x;
  const bool active = i < total;
  const float si = active ? c[i].score : 0.f;
  const int ai = active ? c[i].anchor : 0;
  int rank = 0;
  for (int tile = 0; tile < total; tile += kSortThreads) {
    const int j = tile + threadIdx.x;
    s_score[threadIdx.x] = j < total ? c[j].score : 0.f;
    s_anchor[threadIdx.x] = j < total ? c[j].anchor : 0;
    __syncthreads();
    const int m = min(kSortThreads, total - tile);
    for (int t = 0; t < m; ++t) rank += ranks_before(s_score[t], s_anchor[t], si, ai) ? 1 : 0;
    __syncthreads();
  }
  if (active && rank < max_nms) sorted[static_cast<long long>(n) * ld_sorted + rank] = c[i];
}

// IoU > threshold, as torchvision's nms kernel computes it (fp32, areas from the given boxes), the
// float IoU compared in double against the threshold the user typed (post::threshold_as_decimal).
__device__ __forceinline__ bool iou_above(const float4 a, const float4 b, double threshold) {
  const float left = fmaxf(a.x, b.x), right = fminf(a.z, b.z);
  const float top = fmaxf(a.y, b.y), bottom = fminf(a.w, b.w);
  const float iw = fmaxf(right - left, 0.f), ih = fmaxf(bottom - top, 0.f);
  const float inter = __fmul_rn(iw, ih);
  const float area_a = __fmul_rn(a.z - a.x, a.w - a.y);
  const float area_b = __fmul_rn(b.z - b.x, b.w - b.y);
  return static_cast<double>(__fdiv_rn(inter, __fsub_rn(__fadd_rn(area_a, area_b), inter))) > threshold;
}

__global__ void __launch_bounds__(kNmsChunk) nms_greedy_kernel(
    const DetectCandidate* __restrict__ sorted,  // (B, ld_sorted), by descending score
    const int* __restrict__ count,               // (B) candidates before the max_nms cut
    float* __restrict__ dets,                    // (B, max_det, 6)
    int* __restrict__ det_count,                 // (B)
    int ld_sorted, int max_nms, int max_det, double iou, float max_wh, bool agnostic) {
  extern __shared__ float4 s_kept_box[];  // (max_det) kept boxes, offset by class
  __shared__ int s_kept_index[kMaxDetLimit];
  __shared__ float4 s_box[kNmsChunk];     // this chunk's offset boxes
  __shared__ unsigned s_mask[kNmsChunk][kMaskWords + 1];  // row i: later chunk members i suppresses
  __shared__ unsigned char s_dead[kNmsChunk];
  __shared__ int s_kept;

  const int n = blockIdx.x, tid = threadIdx.x;
  const int total = min(count[n], max_nms);
  const DetectCandidate* cand = sorted + static_cast<long long>(n) * ld_sorted;
  if (tid == 0) s_kept = 0;
  __syncthreads();

  for (int base = 0; base < total; base += kNmsChunk) {
    const int kept_before = s_kept;
    if (kept_before >= max_det) break;  // uniform: s_kept only changes between barriers
    const int chunk = min(kNmsChunk, total - base);
    const int i = base + tid;
    float4 b = make_float4(0.f, 0.f, 0.f, 0.f);
    bool dead = true;
    if (tid < chunk) {
      const DetectCandidate c = cand[i];
      const float off = agnostic ? 0.f : __fmul_rn(static_cast<float>(c.cls), max_wh);
      b = make_float4(__fadd_rn(c.x1, off), __fadd_rn(c.y1, off), __fadd_rn(c.x2, off), __fadd_rn(c.y2, off));
      dead = false;
      for (int k = 0; k < kept_before; ++k)
        if (iou_above(s_kept_box[k], b, iou)) {
          dead = true;
          break;
        }
    }
    s_box[tid] = b;
    s_dead[tid] = dead ? 1 : 0;
    __syncthreads();
    if (tid < chunk) {
      for (int w = 0; w < kMaskWords; ++w) {
        unsigned bits = 0;
        for (int t = 0; t < 32; ++t) {
          const int j = w * 32 + t;
          if (j > tid && j < chunk && iou_above(b, s_box[j], iou)) bits |= 1u << t;
        }
        s_mask[tid][w] = bits;
      }
    }
    __syncthreads();
    if (tid == 0) {
      unsigned removed[kMaskWords] = {};
      int kept = kept_before;
      for (int j = 0; j < chunk && kept < max_det; ++j) {
        if (s_dead[j] || ((removed[j / 32] >> (j % 32)) & 1u)) continue;
        s_kept_box[kept] = s_box[j];
        s_kept_index[kept] = base + j;
        ++kept;
#pragma unroll
        for (int w = 0; w < kMaskWords; ++w) removed[w] |= s_mask[j][w];
      }
      s_kept = kept;
    }
    __syncthreads();
  }

  const int kept = s_kept;
  float* out = dets + static_cast<long long>(n) * max_det * 6;
  for (int k = tid; k < kept; k += blockDim.x) {
    const DetectCandidate c = cand[s_kept_index[k]];
    out[k * 6 + 0] = c.x1;
    out[k * 6 + 1] = c.y1;
    out[k * 6 + 2] = c.x2;
    out[k * 6 + 3] = c.y2;
    out[k * 6 + 4] = c.score;
    out[k * 6 + 5] = static_cast<float>(c.cls);
  }
  if (tid == 0) det_count[n] = kept;
}

}  // namespace

std::size_t detect_workspace_bytes(int batch, int anchors, int max_nms) {
  const std::size_t cand = align_up(sizeof(DetectCandidate) * batch * anchors, 256);
  const std::size_t sorted =
      align_up(sizeof(DetectCandidate) * batch * std::min(anchors, std::max(max_nms, 1)), 256);
  const std::size_t counts = align_up(sizeof(int) * batch, 256);
  return cand + sorted + counts;
}

template <typename T>
void detect_workspace_carve(DetectHeadParams<T>& p, void* workspace) {
  char* base = static_cast<char*>(workspace);
  const std::size_t cand = align_up(sizeof(DetectCandidate) * p.batch * p.anchors, 256);
  const std::size_t sorted =
      align_up(sizeof(DetectCandidate) * p.batch * std::min(p.anchors, std::max(p.max_nms, 1)), 256);
  p.candidates = reinterpret_cast<DetectCandidate*>(base);
  p.sorted = reinterpret_cast<DetectCandidate*>(base + cand);
  p.candidate_count = reinterpret_cast<int*>(base + cand + sorted);
}

bool detect_can_implement(int levels, int reg_max, int nc, int max_det) {
  return levels >= 1 && levels <= kMaxDetectLevels && reg_max >= 1 && reg_max <= kMaxRegMax &&
         nc >= 1 && max_det >= 1 && max_det <= kMaxDetLimit;
}

template <typename T>
void detect_forward(const DetectHeadParams<T>& p, cudaStream_t stream) {
  if (p.batch < 1 || p.anchors < 1) return;
  if (p.candidates) YOLO12_CUDA_CHECK(cudaMemsetAsync(p.candidate_count, 0, sizeof(int) * p.batch, stream));
  dim3 grid(ceil_div(p.anchors, kDecodeThreads), p.batch);
  detect_decode_kernel<T><<<grid, kDecodeThreads, 0, stream>>>(p);
  YOLO12_CUDA_CHECK_LAUNCH();
  if (!p.candidates) return;

  const int max_nms = std::max(p.max_nms, 1);
  const int ld_sorted = std::min(p.anchors, max_nms);
  dim3 sort_grid(ceil_div(p.anchors, kSortThreads), p.batch);
  rank_sort_candidates_kernel<<<sort_grid, kSortThreads, 0, stream>>>(p.candidates, p.candidate_count, p.sorted,
                                                                       p.anchors, ld_sorted, max_nms);
  YOLO12_CUDA_CHECK_LAUNCH();
  const std::size_t smem = sizeof(float4) * p.max_det;
  nms_greedy_kernel<<<p.batch, kNmsChunk, smem, stream>>>(p.sorted, p.candidate_count, p.dets, p.det_count, ld_sorted,
                                                          max_nms, p.max_det, post::threshold_as_decimal(p.iou), p.max_wh,
                                                          p.agnostic);
  YOLO12_CUDA_CHECK_LAUNCH();
}

template void detect_workspace_carve<float>(DetectHeadParams<float>&, void*);
template void detect_workspace_carve<__half>(DetectHeadParams<__half>&, void*);
template void detect_forward<float>(const DetectHeadParams<float>&, cudaStream_t);
template void detect_forward<__half>(const DetectHeadParams<__half>&, cudaStream_t);

template <typename T>
DetectHead<T>::DetectHead(const graph::HeadSpec& head, const BindContext<T>& ctx, const post::NmsParams& nms)
    : max_batch_(ctx.max_batch) {
  if (head.kind != graph::HeadKind::Detect) ctx.cannot_run("a head other than Detect");
  const graph::DetectHead& d = head.detect;
  const int levels = static_cast<int>(d.box.size());
  if (!detect_can_implement(levels, d.attrs.reg_max, d.attrs.nc, nms.max_det) || d.cls.size() != d.box.size() ||
      d.strides.size() != d.box.size())
    ctx.cannot_run("Detect with " + std::to_string(levels) + " levels, reg_max " + std::to_string(d.attrs.reg_max) +
                   ", max_det " + std::to_string(nms.max_det));
  DetectHeadParams<T>& p = params_;
  static_cast<graph::DetectAttrs&>(p) = d.attrs;
  static_cast<post::NmsAttrs&>(p) = nms;
  p.levels = levels;
  p.anchors = 0;
  for (int l = 0; l < levels; ++l) {
    const graph::Value& bv = ctx.value(d.box[static_cast<std::size_t>(l)]);
    p.box[l] = ctx.ptr(d.box[static_cast<std::size_t>(l)]);
    p.ldb[l] = ctx.ld(d.box[static_cast<std::size_t>(l)]);
    p.cls[l] = ctx.ptr(d.cls[static_cast<std::size_t>(l)]);
    p.ldc[l] = ctx.ld(d.cls[static_cast<std::size_t>(l)]);
    p.h[l] = bv.h;
    p.w[l] = bv.w;
    p.stride[l] = static_cast<float>(d.strides[static_cast<std::size_t>(l)]);
    p.anchors += bv.h * bv.w;
  }
  if (p.anchors != d.anchors) ctx.cannot_run("Detect whose maps do not add up to its anchors");
  // Workspace: candidates, sorted candidates and counts for max_batch, then the class filter.
  const std::size_t det_ws = detect_workspace_bytes(max_batch_, p.anchors, p.max_nms);
  workspace_ = DeviceBuffer(det_ws + align_up(static_cast<std::size_t>(p.nc), 256));
  p.batch = max_batch_;  // the carve sizes its regions for this batch
  detect_workspace_carve<T>(p, workspace_.get());
  if (!nms.classes.empty()) {
    std::vector<unsigned char> keep(static_cast<std::size_t>(p.nc), 0);
    for (int c : nms.classes)
      if (c >= 0 && c < p.nc) keep[static_cast<std::size_t>(c)] = 1;
    unsigned char* dev_keep = workspace_.as<unsigned char>(det_ws);
    YOLO12_CUDA_CHECK(cudaMemcpy(dev_keep, keep.data(), keep.size(), cudaMemcpyHostToDevice));
    p.class_keep = dev_keep;
  }
  out_dev_ = DeviceBuffer(out_bytes(max_batch_));
  out_host_ = PinnedBuffer(out_bytes(max_batch_));
  p.det_count = out_dev_.as<int>();
  p.dets = out_dev_.as<float>(align_up(sizeof(int) * max_batch_, 256));
}

template <typename T>
std::size_t DetectHead<T>::out_bytes(int batch) const {
  return align_up(sizeof(int) * max_batch_, 256) + sizeof(float) * 6 * params_.max_det * batch;
}

template <typename T>
void DetectHead<T>::enqueue_raw(int batch, float* raw, cudaStream_t stream) const {
  DetectHeadParams<T> p = params_;
  p.batch = batch;
  p.raw = raw;
  p.candidates = nullptr;
  detect_forward<T>(p, stream);
}

template <typename T>
void DetectHead<T>::enqueue_detect(int batch, cudaStream_t stream) const {
  DetectHeadParams<T> p = params_;
  p.batch = batch;
  detect_forward<T>(p, stream);
  YOLO12_CUDA_CHECK(cudaMemcpyAsync(out_host_.get(), out_dev_.get(), out_bytes(batch), cudaMemcpyDeviceToHost, stream));
}

template <typename T>
void DetectHead<T>::read(int batch, std::vector<Detection>* out) const {
  const int* counts = out_host_.as<int>();
  const float* dets = out_host_.as<float>(align_up(sizeof(int) * max_batch_, 256));
  for (int n = 0; n < batch; ++n) {
    const int k = std::min(counts[n], params_.max_det);
    std::vector<Detection>& v = out[n];
    v.resize(static_cast<std::size_t>(std::max(k, 0)));
    for (int i = 0; i < k; ++i) {
      const float* r = dets + (static_cast<std::size_t>(n) * params_.max_det + i) * 6;
      Detection& d = v[static_cast<std::size_t>(i)];
      d.box = Box{r[0], r[1], r[2], r[3]};
      d.score = r[4];
      d.class_id = static_cast<int>(r[5]);
    }
  }
}

template class DetectHead<float>;
template class DetectHead<__half>;

}  // namespace yolo12::cuda

// checks.cpp - see checks.h.
#include "checks.h"

#include <c10/util/Exception.h>

namespace yolo12_torch {
namespace {

void check_float_dtype(const char* op, const at::Tensor& t, const char* name) {
  TORCH_CHECK_TYPE(at::isFloatingType(t.scalar_type()), op, ": ", name, " must be a floating-point tensor, got ",
                   t.scalar_type());
}

void check_same(const char* op, const at::Tensor& ref, const at::Tensor& t, const char* name) {
  TORCH_CHECK_TYPE(t.scalar_type() == ref.scalar_type(), op, ": ", name, " is ", t.scalar_type(), " but x is ",
                   ref.scalar_type());
  TORCH_CHECK_VALUE(t.device() == ref.device(), op, ": ", name, " is on ", t.device(), " but x is on ", ref.device());
}

}  // namespace

ConvArgs check_conv(const char* op, const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                    const std::optional<at::Tensor>& residual, int64_t stride, int64_t padding, int64_t dilation,
                    int64_t groups) {
  TORCH_CHECK_VALUE(x.dim() == 4, op, ": x must be (B, C, H, W), got ", x.dim(), " dimensions");
  TORCH_CHECK_VALUE(weight.dim() == 4, op, ": weight must be (O, C / groups, k, k), got ", weight.dim(), " dimensions");
  check_float_dtype(op, x, "x");
  check_same(op, x, weight, "weight");
  TORCH_CHECK_VALUE(stride >= 1 && padding >= 0 && dilation >= 1 && groups >= 1, op, ": need stride >= 1, padding >= 0, ",
                    "dilation >= 1, groups >= 1 (got ", stride, ", ", padding, ", ", dilation, ", ", groups, ")");
  ConvArgs a;
  a.batch = x.size(0);
  a.c_in = x.size(1);
  a.h = x.size(2);
  a.w = x.size(3);
  a.c_out = weight.size(0);
  a.k = weight.size(2);
  TORCH_CHECK_VALUE(weight.size(3) == a.k, op, ": only square kernels, got ", weight.size(2), "x", weight.size(3));
  TORCH_CHECK_VALUE(a.c_in % groups == 0 && a.c_out % groups == 0 && weight.size(1) * groups == a.c_in, op,
                    ": x has ", a.c_in, " channels, weight is ", weight.sizes(), ", groups ", groups);
  TORCH_CHECK_VALUE(a.batch >= 1 && a.c_in >= 1 && a.c_out >= 1 && a.k >= 1, op, ": empty x or weight");
  const int64_t span = dilation * (a.k - 1) + 1;
  TORCH_CHECK_VALUE(a.h + 2 * padding >= span && a.w + 2 * padding >= span, op, ": the ", a.k, "x", a.k,
                    " kernel (dilation ", dilation, ") does not fit the padded ", a.h, "x", a.w, " input");
  a.ho = (a.h + 2 * padding - span) / stride + 1;
  a.wo = (a.w + 2 * padding - span) / stride + 1;
  a.stride = stride;
  a.pad = padding;
  a.dilation = dilation;
  a.groups = groups;
  if (bias && bias->defined()) {
    check_same(op, x, *bias, "bias");
    TORCH_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == a.c_out, op, ": bias must be (", a.c_out, "), got ",
                      bias->sizes());
  }
  if (residual && residual->defined()) {
    check_same(op, x, *residual, "residual");
    TORCH_CHECK_VALUE(residual->sizes() == at::IntArrayRef({a.batch, a.c_out, a.ho, a.wo}), op, ": residual must be (",
                      a.batch, ", ", a.c_out, ", ", a.ho, ", ", a.wo, "), got ", residual->sizes());
  }
  return a;
}

AttentionArgs check_attention(const char* op, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              int64_t area) {
  TORCH_CHECK_VALUE(q.dim() == 4 && q.size(3) == kHeadDim, op, ": q must be (B, N, heads, 32), got ", q.sizes());
  check_float_dtype(op, q, "q");
  TORCH_CHECK_VALUE(k.sizes() == q.sizes() && v.sizes() == q.sizes(), op, ": q, k, v must have one shape, got ",
                    q.sizes(), ", ", k.sizes(), ", ", v.sizes());
  TORCH_CHECK_TYPE(k.scalar_type() == q.scalar_type() && v.scalar_type() == q.scalar_type(), op,
                   ": q, k, v must have one dtype");
  TORCH_CHECK_VALUE(k.device() == q.device() && v.device() == q.device(), op, ": q, k, v must be on one device");
  AttentionArgs a{q.size(0), q.size(1), q.size(2), area};
  TORCH_CHECK_VALUE(a.batch >= 1 && a.tokens >= 1 && a.heads >= 1, op, ": empty q, k, v ", q.sizes());
  TORCH_CHECK_VALUE(area >= 1 && a.tokens % area == 0, op, ": ", a.tokens, " tokens cannot be cut into ", area,
                    " equal areas");
  return a;
}

DetectArgs check_detect(const char* op, at::TensorList box, at::TensorList cls, at::IntArrayRef strides) {
  const auto levels = static_cast<int64_t>(box.size());
  TORCH_CHECK_VALUE(levels >= 1 && levels <= kMaxLevels, op, ": 1 to ", kMaxLevels, " levels, got ", levels);
  TORCH_CHECK_VALUE(static_cast<int64_t>(cls.size()) == levels && static_cast<int64_t>(strides.size()) == levels, op,
                    ": need one box map, one class map and one stride per level (got ", box.size(), ", ", cls.size(),
                    ", ", strides.size(), ")");
  DetectArgs a;
  a.anchors = 0;
  for (int64_t l = 0; l < levels; ++l) {
    const at::Tensor& b = box[l];
    const at::Tensor& c = cls[l];
    TORCH_CHECK_VALUE(b.dim() == 4 && c.dim() == 4, op, ": level ", l, " maps must be (B, C, H, W)");
    check_float_dtype(op, b, "box");
    check_same(op, box[0], b, "box");
    check_same(op, box[0], c, "cls");
    if (l == 0) {
      a.batch = b.size(0);
      a.reg_max = b.size(1) / 4;
      a.nc = c.size(1);
    }
    TORCH_CHECK_VALUE(b.size(1) == 4 * a.reg_max && a.reg_max >= 1 && a.reg_max <= 64, op, ": level ", l,
                      " box map has ", b.size(1), " channels; need 4 * reg_max with reg_max in [1, 64] at every level");
    TORCH_CHECK_VALUE(c.size(1) == a.nc && a.nc >= 1, op, ": level ", l, " class map has ", c.size(1),
                      " channels, level 0 has ", a.nc);
    TORCH_CHECK_VALUE(b.size(0) == a.batch && c.size(0) == a.batch && c.size(2) == b.size(2) &&
                          c.size(3) == b.size(3) && b.size(2) >= 1 && b.size(3) >= 1,
                      op, ": level ", l, " box ", b.sizes(), " and class ", c.sizes(), " maps do not agree");
    TORCH_CHECK_VALUE(strides[l] > 0, op, ": stride of level ", l, " must be positive");
    a.h.push_back(b.size(2));
    a.w.push_back(b.size(3));
    a.anchors += b.size(2) * b.size(3);
  }
  TORCH_CHECK_VALUE(a.batch >= 1, op, ": empty batch");
  return a;
}

}  // namespace yolo12_torch

// Direct against Winograd for one 3x3 stride-1 convolution, as strata's channels-last training kernels run it
// (src/ops/dnnl/conv.cc, conv_backward.cc): the measurements behind the channel rule of src/ops/dnnl/winograd.cc.
//
//   build/bench/conv_winograd_bench [--threads T] [--reps R] [N C M H W pad]...   (default: 64 32 64 13 13 0)
//
// Per layer and pass, the median milliseconds of R runs (after 3 untimed ones) of everything the kernel does per
// run, reorders included:
//   forward:          direct = oneDNN's nhwc convolution with the relu post-op (no reorders; weights reordered
//                     from plain, as they change every training step); Winograd = nhwc -> blocked reorder of X,
//                     the forward-training Winograd primitive with relu, blocked -> nhwc reorder of Y.
//   backward data:    dY nhwc -> the primitive's layout, W plain -> its layout, the primitive, dX back to nhwc.
//   backward weights: dY and X nhwc -> the primitive's layouts, the primitive, dW (and dB) back to plain.
// Threads: OMP_NUM_THREADS / --threads (omp_set_num_threads). The CPU engine's implementation names are printed so a
// row that oneDNN could not give Winograd shows it.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using Md = dnnl::memory::desc;
using Tag = dnnl::memory::format_tag;
using Dims = dnnl::memory::dims;
constexpr auto kF32 = dnnl::memory::data_type::f32;

dnnl::engine& Eng() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

struct Layer {
  int64_t n, c, m, h, w, pad;
};

memory Filled(const Md& md, float v) {
  memory mem(md, Eng());
  float* p = static_cast<float*>(mem.get_data_handle());
  const size_t count = md.get_size() / sizeof(float);
  for (size_t i = 0; i < count; ++i) p[i] = v * static_cast<float>((i * 2654435761u) % 1000) / 1000.0f - 0.5f * v;
  return mem;
}

// A step list: primitives with their arguments, run in order on one stream.
struct Steps {
  std::vector<std::pair<dnnl::primitive, std::unordered_map<int, memory>>> list;
  void Reorder(const memory& from, const memory& to) {
    if (from.get_desc() == to.get_desc()) return;
    list.push_back({dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}});
  }
  void Run(dnnl::stream& s) {
    for (auto& [p, args] : list) p.execute(s, args);
    s.wait();
  }
};

double MedianMs(Steps& steps, int reps) {
  dnnl::stream s(Eng());
  for (int i = 0; i < 3; ++i) steps.Run(s);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    steps.Run(s);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Memory in `md` unless it equals `user`'s desc, with a reorder from/to `user` added to `steps`.
memory Into(Steps& steps, const memory& user, const Md& md) {
  if (user.get_desc() == md) return user;
  memory m(md, Eng());
  steps.Reorder(user, m);
  return m;
}

struct Result {
  double ms = 0;
  std::string impl;
};

Result Forward(const Layer& l, bool wino, int reps) {
  const Dims x_d{l.n, l.c, l.h, l.w}, w_d{l.m, l.c, 3, 3}, b_d{l.m};
  const int64_t oh = l.h + 2 * l.pad - 2, ow = l.w + 2 * l.pad - 2;
  const Dims y_d{l.n, l.m, oh, ow}, s{1, 1}, p{l.pad, l.pad};
  const Md any_x(x_d, kF32, Tag::any), any_w(w_d, kF32, Tag::any), any_y(y_d, kF32, Tag::any);
  const Md nhwc_x(x_d, kF32, Tag::nhwc), nhwc_y(y_d, kF32, Tag::nhwc);
  dnnl::post_ops po;
  po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  const auto alg = wino ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, alg, wino ? any_x : nhwc_x, any_w,
                                    Md(b_d, kF32, Tag::a), wino ? any_y : nhwc_y, s, p, p);
  dnnl::convolution_forward::primitive_desc pd(d, attr, Eng());
  Steps st;
  memory x_user = Filled(nhwc_x, 1), w_user = Filled(Md(w_d, kF32, Tag::oihw), 0.1f),
         b = Filled(Md(b_d, kF32, Tag::a), 0.1f);
  memory y_user(nhwc_y, Eng());
  memory x = Into(st, x_user, pd.src_desc()), w = Into(st, w_user, pd.weights_desc());
  memory y = pd.dst_desc() == nhwc_y ? y_user : memory(pd.dst_desc(), Eng());
  st.list.push_back({dnnl::convolution_forward(pd),
                     {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}}});
  st.Reorder(y, y_user);
  return {MedianMs(st, reps), pd.impl_info_str()};
}

Result BackwardData(const Layer& l, bool wino, int reps) {
  const Dims x_d{l.n, l.c, l.h, l.w}, w_d{l.m, l.c, 3, 3};
  const int64_t oh = l.h + 2 * l.pad - 2, ow = l.w + 2 * l.pad - 2;
  const Dims y_d{l.n, l.m, oh, ow}, s{1, 1}, p{l.pad, l.pad};
  const Md any_x(x_d, kF32, Tag::any), any_w(w_d, kF32, Tag::any), any_y(y_d, kF32, Tag::any);
  const auto alg = wino ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::desc hd(dnnl::prop_kind::forward_training, alg, any_x, any_w, Md(), any_y, s, p, p);
  dnnl::convolution_forward::primitive_desc hint(hd, Eng());
  dnnl::convolution_backward_data::desc d(alg, any_x, any_w, any_y, s, p, p);
  dnnl::convolution_backward_data::primitive_desc pd(d, Eng(), hint);
  Steps st;
  memory dy_user = Filled(Md(y_d, kF32, Tag::nhwc), 1), w_user = Filled(Md(w_d, kF32, Tag::oihw), 0.1f);
  memory dx_user(Md(x_d, kF32, Tag::nhwc), Eng());
  memory dy = Into(st, dy_user, pd.diff_dst_desc()), w = Into(st, w_user, pd.weights_desc());
  memory dx = pd.diff_src_desc() == dx_user.get_desc() ? dx_user : memory(pd.diff_src_desc(), Eng());
  st.list.push_back(
      {dnnl::convolution_backward_data(pd), {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, dx}}});
  st.Reorder(dx, dx_user);
  return {MedianMs(st, reps), pd.impl_info_str()};
}

Result BackwardWeights(const Layer& l, bool wino, int reps) {
  const Dims x_d{l.n, l.c, l.h, l.w}, w_d{l.m, l.c, 3, 3}, b_d{l.m};
  const int64_t oh = l.h + 2 * l.pad - 2, ow = l.w + 2 * l.pad - 2;
  const Dims y_d{l.n, l.m, oh, ow}, s{1, 1}, p{l.pad, l.pad};
  const Md any_x(x_d, kF32, Tag::any), any_w(w_d, kF32, Tag::any), any_y(y_d, kF32, Tag::any);
  const Md any_b(b_d, kF32, Tag::any);
  const auto alg = wino ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  dnnl::convolution_forward::desc hd(dnnl::prop_kind::forward_training, alg, any_x, any_w, any_b, any_y, s, p, p);
  dnnl::convolution_forward::primitive_desc hint(hd, Eng());
  dnnl::convolution_backward_weights::desc d(alg, any_x, any_w, any_b, any_y, s, p, p);
  dnnl::convolution_backward_weights::primitive_desc pd(d, Eng(), hint);
  Steps st;
  memory dy_user = Filled(Md(y_d, kF32, Tag::nhwc), 1), x_user = Filled(Md(x_d, kF32, Tag::nhwc), 1);
  memory dw_user(Md(w_d, kF32, Tag::oihw), Eng()), db_user(Md(b_d, kF32, Tag::a), Eng());
  memory dy = Into(st, dy_user, pd.diff_dst_desc()), x = Into(st, x_user, pd.src_desc());
  memory dw = pd.diff_weights_desc() == dw_user.get_desc() ? dw_user : memory(pd.diff_weights_desc(), Eng());
  memory db = pd.diff_bias_desc() == db_user.get_desc() ? db_user : memory(pd.diff_bias_desc(), Eng());
  st.list.push_back(
      {dnnl::convolution_backward_weights(pd),
       {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_WEIGHTS, dw}, {DNNL_ARG_DIFF_BIAS, db}}});
  st.Reorder(dw, dw_user);
  st.Reorder(db, db_user);
  return {MedianMs(st, reps), pd.impl_info_str()};
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 50;
  std::vector<int64_t> nums;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
      omp_set_num_threads(std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      char* end = nullptr;
      const long v = std::strtol(argv[i], &end, 10);
      if (!end || *end || v < 0) {
        std::fprintf(stderr, "conv_winograd_bench: expected a number (N C M H W pad), found '%s'\n", argv[i]);
        return 2;
      }
      nums.push_back(v);
    }
  }
  // Groups of N C M H W pad (pad 1 = 'same', 0 = 'valid').
  if (nums.size() % 6 != 0) {
    std::fprintf(stderr, "conv_winograd_bench: layers are groups of 6 numbers (N C M H W pad), found %zu numbers\n",
                 nums.size());
    return 2;
  }
  std::vector<Layer> layers;
  for (size_t i = 0; i < nums.size(); i += 6) {
    const Layer l{nums[i], nums[i + 1], nums[i + 2], nums[i + 3], nums[i + 4], nums[i + 5]};
    if (l.h + 2 * l.pad < 3 || l.w + 2 * l.pad < 3 || l.n < 1 || l.c < 1 || l.m < 1) {
      std::fprintf(stderr, "conv_winograd_bench: layer %ld %ld %ld %ld %ld pad %ld is too small for 3x3\n", (long)l.n,
                   (long)l.c, (long)l.m, (long)l.h, (long)l.w, (long)l.pad);
      return 2;
    }
    layers.push_back(l);
  }
  if (layers.empty()) layers.push_back({64, 32, 64, 13, 13, 0});  // the Fashion CNN's second convolution
  std::printf("threads %d, median of %d runs, ms (direct / Winograd = ratio)\n", omp_get_max_threads(), reps);
  for (const Layer& l : layers) {
    using Fn = std::function<Result(const Layer&, bool, int)>;
    const std::pair<const char*, Fn> passes[] = {
        {"forward", Forward}, {"backward data", BackwardData}, {"backward weights", BackwardWeights}};
    double total_d = 0, total_w = 0;
    for (const auto& [name, fn] : passes) {
      Result d = fn(l, false, reps), w;
      try {
        w = fn(l, true, reps);
      } catch (const dnnl::error& e) {
        std::printf("N%ld %ld->%ld %ldx%ld pad %ld %-16s direct %.3f (%s), no Winograd: %s\n", (long)l.n, (long)l.c,
                    (long)l.m, (long)l.h, (long)l.w, (long)l.pad, name, d.ms, d.impl.c_str(), e.what());
        continue;
      }
      total_d += d.ms;
      total_w += w.ms;
      std::printf("N%ld %ld->%ld %ldx%ld pad %ld %-16s %.3f / %.3f = %.2f  (%s / %s)\n", (long)l.n, (long)l.c,
                  (long)l.m, (long)l.h, (long)l.w, (long)l.pad, name, d.ms, w.ms, w.ms / d.ms, d.impl.c_str(),
                  w.impl.c_str());
    }
    std::printf("N%ld %ld->%ld %ldx%ld pad %ld %-16s %.3f / %.3f = %.2f\n", (long)l.n, (long)l.c, (long)l.m, (long)l.h,
                (long)l.w, (long)l.pad, "all three", total_d, total_w, total_d > 0 ? total_w / total_d : 0.0);
  }
  return 0;
}

#include "model/quantize.h"

#include <algorithm>
#include <chrono>

#include "model/gguf_writer.h"

namespace brisk {
namespace {

// Output bytes converted per step: bounds memory to a few MiB per tensor.
constexpr uint64_t kChunkBytes = 4ull << 20;

// Converts rows [0, n_rows) of `src` (format `from`) into `dst` (format `to`)
// through f32, rows split across the pool.
void ConvertRows(DType from, DType to, const uint8_t* src, uint8_t* dst, int64_t row_len,
                 int64_t n_rows, ThreadPool& pool) {
  const int64_t in_row = RowBytes(from, row_len), out_row = RowBytes(to, row_len);
  pool.ParallelFor(n_rows, 1, [&](int64_t b, int64_t e) {
    std::vector<float> row(static_cast<size_t>(row_len));
    for (int64_t r = b; r < e; ++r) {
      DequantizeRow(from, src + r * in_row, row.data(), row_len);
      QuantizeRow(to, row.data(), dst + r * out_row, row_len);
    }
  });
}

}  // namespace

Expected<QuantizeStats> RunQuantization(
    const GgufFile& in, const QuantPlan& plan, const std::string& out_path, ThreadPool& pool,
    const std::function<void(const QuantizeProgress&)>& on_progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto& infos = in.tensors();
  if (infos.size() != plan.tensors.size())
    return InvalidArgument("the plan has {} tensors, the file {}", plan.tensors.size(),
                           infos.size());

  GgufWriter w(out_path);
  for (const auto& [key, value] : in.metadata()) w.SetValue(key, value);
  w.SetU32("general.file_type", plan.target.ftype);
  if (plan.target.is_float()) {
    w.Remove("general.quantization_version");
  } else {
    w.SetU32("general.quantization_version", 2);
  }

  QuantizeStats stats;
  stats.in_file_bytes = in.bytes().size();
  for (size_t i = 0; i < infos.size(); ++i) {
    const TensorPlan& p = plan.tensors[i];
    if (p.name != infos[i].name)
      return InvalidArgument("plan tensor {} is '{}', the file's is '{}'", i, p.name,
                             infos[i].name);
    RETURN_IF_ERROR(w.AddTensor(p.name, p.dims, p.to));
    stats.in_data_bytes += infos[i].size_bytes;
    stats.out_data_bytes += w.TensorBytes(i);
    stats.n_weights += infos[i].n_elements();
  }
  RETURN_IF_ERROR(w.Begin());

  QuantizeProgress progress;
  progress.count = infos.size();
  progress.in_bytes_total = stats.in_data_bytes;
  std::vector<uint8_t> buffer;
  for (size_t i = 0; i < infos.size(); ++i) {
    const GgufTensorInfo& t = infos[i];
    const TensorPlan& p = plan.tensors[i];
    progress.index = i;
    progress.done = false;
    if (on_progress) on_progress(progress);
    if (p.copy()) {
      RETURN_IF_ERROR(w.Append({t.data, static_cast<size_t>(t.size_bytes)}));
    } else {
      const int64_t row_len = p.dims[0];
      const int64_t n_rows = t.n_elements() / row_len;
      const int64_t in_row = RowBytes(p.from, row_len), out_row = RowBytes(p.to, row_len);
      const int64_t chunk_rows =
          std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes) / std::max<int64_t>(1, out_row));
      buffer.resize(static_cast<size_t>(std::min(chunk_rows, n_rows) * out_row));
      for (int64_t r0 = 0; r0 < n_rows; r0 += chunk_rows) {
        const int64_t nr = std::min(chunk_rows, n_rows - r0);
        ConvertRows(p.from, p.to, t.data + r0 * in_row, buffer.data(), row_len, nr, pool);
        RETURN_IF_ERROR(w.Append({buffer.data(), static_cast<size_t>(nr * out_row)}));
      }
    }
    progress.done = true;
    progress.in_bytes_done += t.size_bytes;
    progress.out_bytes_done += w.TensorBytes(i);
    if (on_progress) on_progress(progress);
  }
  stats.out_file_bytes = w.bytes_written();
  RETURN_IF_ERROR(w.Finish());
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return stats;
}

}  // namespace brisk

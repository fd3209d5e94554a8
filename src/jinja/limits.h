// Limits on one template render: output size, loop iterations, work, and
// evaluation depth. A render that exceeds one stops with ResourceExhausted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace brisk::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;
  uint64_t max_loop_iterations = 1'000'000;
  // Bytes of strings plus elements of lists/dicts that expressions may build.
  uint64_t max_work = uint64_t{1} << 26;
  // Nested evaluation frames (statements, expressions, macro calls) and the
  // native stack they may use below Render's own frame.
  int max_eval_depth = 600;
  size_t max_stack_bytes = size_t{512} << 10;
  // strftime_now() reads this instant instead of the clock when set
  // (reproducible prompts and tests).
  std::optional<int64_t> now_unix_seconds;
};

}  // namespace brisk::jinja

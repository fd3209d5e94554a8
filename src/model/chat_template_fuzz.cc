// libFuzzer target (BRISK_FUZZ=ON): the input's first line is a JSON context,
// the rest a template. Parsing and rendering must return a value or a Status,
// never crash, hang or grow without bound.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string_view ctx_text = nl == std::string_view::npos ? std::string_view() : in.substr(0, nl);
  std::string_view source = nl == std::string_view::npos ? in : in.substr(nl + 1);
  auto tmpl = brisk::ChatTemplate::Parse(source);
  if (!tmpl.ok()) return 0;
  brisk::ChatTemplateOptions opts;
  opts.max_output_bytes = 1 << 16;
  opts.max_loop_iterations = 10000;
  opts.max_work = 1 << 20;
  tmpl->set_options(opts);
  nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(ctx_text, nullptr, false);
  if (!ctx.is_object()) {
    ctx = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"add_generation_prompt", true}};
  }
  (void)tmpl->RenderJson(ctx);
  return 0;
}

// The default model's tokenizer and prompt renderer, loaded once per test
// process (nullptr when the model is not installed): what the server tests
// that need real tokenization but no engine stand on.
#pragma once

#include <memory>
#include <string>

#include "model/gguf.h"
#include "model/prompt_renderer.h"
#include "model/tokenizer.h"

namespace brisk {

struct DefaultRenderer {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<PromptRenderer> renderer;

  // The process-wide instance; its renderer is null if the model is missing.
  static const DefaultRenderer& Get() {
    static const DefaultRenderer* d = [] {
      auto* r = new DefaultRenderer();
      auto file = GgufFile::Open(std::string(BRISK_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf");
      if (!file.ok()) return r;
      r->file = std::move(file).value();
      auto tok = Tokenizer::FromGguf(*r->file);
      if (!tok.ok()) return r;
      r->tok = std::move(tok).value();
      auto renderer = PromptRenderer::FromGguf(*r->file, *r->tok);
      if (renderer.ok()) r->renderer = std::move(renderer).value();
      return r;
    }();
    return *d;
  }
};

}  // namespace brisk

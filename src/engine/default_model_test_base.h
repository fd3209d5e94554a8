// Test base for engine tests on a real installed model (the default one, or
// Gemma 3 270M): loads the model and its tokenizer once per test binary,
// skips when the model is not installed.
// (Header only: included by *_test.cc files, not part of the engine library.)
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "engine/engine.h"
#include "util/test_support.h"

namespace brisk {

inline constexpr char kDefaultModelFile[] = "SmolLM2-135M-Instruct.Q4_1.gguf";
inline constexpr char kGemmaModelFile[] = "gemma-3-270m-q4_k_m.gguf";

// kModelFile: a file in BRISK_MODEL_DIR.
template <const char* kModelFile>
class InstalledModelTest : public ::testing::Test {
 protected:
  static std::string ModelPath() { return std::string(BRISK_MODEL_DIR) + "/" + kModelFile; }
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(ModelPath())) return;
    auto m = Model::Load(ModelPath());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m).release();
    auto t = Tokenizer::FromGguf(model_->file());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tok_ = std::move(*t).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    delete model_;
    tok_ = nullptr;
    model_ = nullptr;
  }
  void SetUp() override {
    if (!model_) BRISK_SKIP_OR_FAIL_MISSING(kModelFile);
  }
  // A greedy request for `text` (BOS added, special tokens not parsed).
  GenerationRequest Greedy(const std::string& text, int max_tokens) {
    GenerationRequest r;
    r.prompt = tok_->Encode(text, true, false);
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    return r;
  }
  inline static Model* model_ = nullptr;
  inline static Tokenizer* tok_ = nullptr;
};

using DefaultModelTest = InstalledModelTest<kDefaultModelFile>;

}  // namespace brisk

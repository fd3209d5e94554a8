// The distribution check of the serving gate: a served
// configuration of a model file (weight precision, KV precision) against the
// file's native configuration (the weights as stored, F16 KV) on an
// evaluation text, cut and scored as `brisk eval kld` does it (kld_run.h,
// kld_stats.h). `brisk eval golden` runs it in-process when the set's gate
// file names a KLD threshold, so one command checks both halves of the gate
// for the serving key of the server it evaluated.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "eval/kld_run.h"
#include "eval/kld_stats.h"
#include "model/gguf.h"
#include "util/status.h"

namespace brisk::eval {

// The text file's tokens (BOS first when the model adds one) cut into at
// most `max_chunks` chunks of `n_ctx` tokens (0 = all), as MakeChunks does.
Expected<TextChunks> ChunkTextFile(const GgufFile& file, const std::string& text_path, int n_ctx,
                                   int max_chunks);

struct KldCheckConfig {
  std::string precision = "native";  // weights under test, as model.precision
  std::string kv_precision = "f16";  // KV cache under test, as cache.kv_precision
  std::string rope = "file";         // RoPE scaling under test, as ServingKey::rope
  std::string text;                  // evaluation text (path)
  int n_ctx = 512;
  int max_chunks = 6;
  int threads = 2;
};

// Binds `file` twice (one mapping): as stored with an F16 KV cache (the
// reference) and as `c` says, and scores each chunk with both. The
// reference's log-probs are held for one chunk at a time, 16-bit packed as
// a saved base holds them, so the numbers are those of `brisk eval kld
// --precision native --save-base` followed by `--base` with `c`.
// `on_chunk(done, total)` after each chunk.
Expected<KldSummary> CompareWithNative(std::shared_ptr<const GgufFile> file,
                                       const KldCheckConfig& c,
                                       const std::function<void(int, int)>& on_chunk = {});

// The gate report's "kld" object: the summary (SummaryJson) with what was
// compared ("reference", "tested", "text", "n_ctx", "chunks").
nlohmann::json KldCheckJson(const KldSummary& s, const KldCheckConfig& c,
                            const std::string& model_path);

}  // namespace brisk::eval

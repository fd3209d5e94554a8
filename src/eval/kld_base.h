// The reference side of `brisk eval kld`, saved once and reused: the text's
// chunks and, for every scored position, the reference configuration's
// log-probabilities over the vocabulary (16-bit steps, see PackLogProbs), so
// each configuration under test is compared without running the reference
// again (as llama-perplexity's --kl-divergence-base file is used).
//
// Layout (little-endian): "BRISKKLD", u32 version (1), u32 vocab, u32 n_ctx,
// u32 n_chunks, u32 bos (0xFFFFFFFF: none), u32 description length, the
// description (UTF-8 JSON: reference model file, precision), i32 tokens
// [n_chunks * n_ctx], then per scored position in order: f32 min, f32 step,
// u16 q[vocab].
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "eval/kld_run.h"
#include "util/status.h"

namespace brisk::eval {

struct KldBaseHeader {
  int vocab = 0;
  std::string description;
  TextChunks chunks;
};

class KldBaseWriter {
 public:
  // Writes to `path`.tmp; Finish() renames it to `path`, so an interrupted
  // run leaves no base that looks whole.
  static Expected<std::unique_ptr<KldBaseWriter>> Create(const std::string& path,
                                                         const KldBaseHeader& header);
  ~KldBaseWriter();
  // One scored position's log-probs (vocab floats).
  Status Append(const float* log_probs);
  Status Finish();

 private:
  KldBaseWriter() = default;
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  int vocab_ = 0;
  int64_t rows_left_ = 0;
  std::vector<uint16_t> q_;
};

class KldBaseReader {
 public:
  // Checks the magic, the version and that the file's size is exactly what
  // its header says (DataLoss for a truncated or padded file).
  static Expected<std::unique_ptr<KldBaseReader>> Open(const std::string& path);
  ~KldBaseReader();
  const KldBaseHeader& header() const { return header_; }
  // The next scored position's log-probs (renormalized), vocab floats.
  Status Next(float* log_probs);

 private:
  KldBaseReader() = default;
  std::string path_;
  std::FILE* f_ = nullptr;
  KldBaseHeader header_;
  int64_t rows_left_ = 0;
  std::vector<uint16_t> q_;
};

}  // namespace brisk::eval

#include "model/tokenizer_incremental.h"

#include "model/tokenizer.h"
#include "util/utf8.h"

namespace brisk {

std::string IncrementalDetokenizer::Push(int32_t token) {
  pending_ += tokenizer_->TokenToPiece(token, !skip_special_);
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    size_t len = 0;
    const Utf8Check c = CheckUtf8(std::string_view(pending_).substr(i), &len);
    if (c == Utf8Check::kIncomplete) break;  // wait for the next token
    if (c == Utf8Check::kValid) {
      out.append(pending_, i, len);
    } else {
      out.append(kUtf8Replacement);
    }
    i += len;
  }
  pending_.erase(0, i);
  return out;
}

std::string IncrementalDetokenizer::Flush() {
  std::string out = ToValidUtf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace brisk

#include "grammar/cfg_mask.h"

#include <string>

namespace brisk {
namespace {

void SetBit(TokenBitmask& m, int32_t id) {
  m[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
}

}  // namespace

void CfgTokenMasker::Compute(CfgMatcher& m, TokenBitmask* out) {
  const TokenTrie& t = *trie_;
  out->assign(t.words_, 0);
  visited_ = 0;
  if (!m.Finished()) {
    const size_t base = m.num_sets();
    const uint32_t n = static_cast<uint32_t>(t.byte_.size());
    for (uint32_t i = 1; i < n;) {
      ++visited_;
      m.Rollback(base + t.depth_[i] - 1);
      if (!m.Advance(t.byte_[i])) {
        i = t.next_[i];
        continue;
      }
      for (uint32_t k = t.tok_begin_[i]; k < t.tok_end_[i]; ++k) SetBit(*out, t.ids_[k]);
      ++i;
    }
    m.Rollback(base);
  }
  if (m.CanEnd())
    for (int32_t id : t.eog_) SetBit(*out, id);
}

void CfgTokenMasker::ComputeReference(const TokenVocab& token_vocab, const CfgMatcher& m,
                                      TokenBitmask* out) {
  const int32_t vocab = token_vocab.size();
  out->assign((static_cast<size_t>(vocab) + 63) / 64, 0);
  CfgMatcher copy;
  copy.CopyFrom(m);
  const size_t base = copy.num_sets();
  for (int32_t id = 0; id < vocab; ++id) {
    if (token_vocab.kinds[id] == TokenVocab::Kind::kEog) {
      if (m.CanEnd()) SetBit(*out, id);
      continue;
    }
    if (token_vocab.kinds[id] == TokenVocab::Kind::kControl) continue;
    const std::string& piece = token_vocab.pieces[id];
    if (piece.empty() || piece.size() > 255) continue;
    if (copy.AdvanceBytes(piece)) {
      SetBit(*out, id);
      copy.Rollback(base);
    }
  }
}

}  // namespace brisk

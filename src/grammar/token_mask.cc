#include "grammar/token_mask.h"

#include <algorithm>
#include <string>
#include <utility>

#include "grammar/string_lexer.h"

namespace brisk {
namespace {

// Code points of `s` if it is plain string text (complete UTF-8 characters,
// no '"', '\\' or control bytes), else -1.
int PlainChars(const std::string& s) {
  uint8_t state = 0, aux = 0, range = 0;
  int chars = 0;
  for (char ch : s) {
    const auto c = static_cast<uint8_t>(ch);
    if (c == '"' || c == '\\') return -1;
    switch (string_lexer::Lex(state, aux, range, c, /*canonical=*/false)) {
      case string_lexer::Lexed::kCharStart: ++chars; break;
      case string_lexer::Lexed::kCharMore: break;
      default: return -1;
    }
  }
  return state == string_lexer::kNormal ? chars : -1;
}

void SetBit(TokenBitmask& m, int32_t id) {
  m[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
}

}  // namespace

std::unique_ptr<TokenTrie> TokenTrie::Build(const TokenVocab& token_vocab) {
  auto t = std::unique_ptr<TokenTrie>(new TokenTrie());
  const int32_t vocab = token_vocab.size();
  t->vocab_size_ = vocab;
  t->words_ = (static_cast<size_t>(vocab) + 63) / 64;
  std::vector<std::pair<std::string, int32_t>> pieces;
  pieces.reserve(vocab);
  for (int32_t id = 0; id < vocab; ++id) {
    if (token_vocab.kinds[id] == TokenVocab::Kind::kEog) {
      t->eog_.push_back(id);
      continue;
    }
    if (token_vocab.kinds[id] == TokenVocab::Kind::kControl) continue;
    const std::string& p = token_vocab.pieces[id];
    if (p.empty() || p.size() > 255) continue;
    pieces.emplace_back(p, id);
  }
  std::sort(pieces.begin(), pieces.end());

  // Sorted pieces give the trie in preorder: each piece shares its longest
  // common prefix with the previous one; nodes deeper than that are closed.
  t->plain_upto_.assign(kMaxPlainChars + 2, TokenBitmask(t->words_, 0));
  std::vector<uint32_t> parent;
  std::vector<uint32_t> path{0};  // path[d]: node at depth d of the current piece
  const auto add_node = [&](uint8_t byte, size_t depth) {
    t->byte_.push_back(byte);
    t->depth_.push_back(static_cast<uint8_t>(depth));
    t->next_.push_back(0);
    t->tok_begin_.push_back(0);
    t->tok_end_.push_back(0);
    t->all_plain_.push_back(1);
    parent.push_back(path[depth - 1]);
    return static_cast<uint32_t>(t->byte_.size() - 1);
  };
  t->byte_.push_back(0), t->depth_.push_back(0), t->next_.push_back(0);
  t->tok_begin_.push_back(0), t->tok_end_.push_back(0), t->all_plain_.push_back(1);
  parent.push_back(0);
  std::string prev;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const std::string& s = pieces[k].first;
    size_t lcp = 0;
    while (lcp < s.size() && lcp < prev.size() && s[lcp] == prev[lcp]) ++lcp;
    for (size_t d = path.size() - 1; d > lcp; --d) t->next_[path[d]] = t->byte_.size();
    path.resize(lcp + 1);
    for (size_t d = lcp + 1; d <= s.size(); ++d) path.push_back(add_node(s[d - 1], d));
    const uint32_t node = path.back();
    if (t->tok_end_[node] == 0) t->tok_begin_[node] = static_cast<uint32_t>(k);
    t->tok_end_[node] = static_cast<uint32_t>(k + 1);
    t->max_depth_ = std::max(t->max_depth_, s.size());
    const int chars = PlainChars(s);
    if (chars < 0) {
      t->all_plain_[node] = 0;
    } else {
      for (int b = std::min(chars, kMaxPlainChars + 1); b <= kMaxPlainChars + 1; ++b)
        SetBit(t->plain_upto_[b], pieces[k].second);
      if (chars > kMaxPlainChars) t->long_plain_.emplace_back(chars, pieces[k].second);
    }
    prev = s;
  }
  for (size_t d = path.size(); d-- > 0;) t->next_[path[d]] = t->byte_.size();
  std::sort(t->long_plain_.begin(), t->long_plain_.end());
  // Children come after parents: fold all_plain upwards.
  for (size_t i = t->byte_.size(); i-- > 1;)
    if (!t->all_plain_[i]) t->all_plain_[parent[i]] = 0;
  t->ids_.reserve(pieces.size());
  for (const auto& p : pieces) t->ids_.push_back(p.second);
  return t;
}

TokenMasker::TokenMasker(const TokenTrie* trie) : trie_(trie) {
  states_.resize(trie->max_depth() + 1);
  frames_.resize(trie->max_depth() + 1);
  path_.resize(trie->max_depth() + 1);
  close_seen_.resize(trie->num_nodes());
}

void TokenMasker::WalkPattern(const ByteDfa& dfa, const MatchFrame& top, bool canonical,
                              PatternWalk* walk) {
  const TokenTrie& t = *trie_;
  walk->inside.assign(t.words_, 0);
  walk->close_nodes.clear();
  walk->close_bytes.clear();
  frames_[0] = top;
  const uint32_t n = static_cast<uint32_t>(t.byte_.size());
  for (uint32_t i = 1; i < n;) {
    ++visited_;
    const uint8_t d = t.depth_[i];
    const uint8_t b = t.byte_[i];
    path_[d] = b;
    // The same steps as GrammarMatcher::StepString for a pattern.
    MatchFrame& f = frames_[d];
    f = frames_[d - 1];
    using string_lexer::Lexed;
    const Lexed lexed = string_lexer::Lex(f.lex, f.lex_aux, f.flags, b, canonical);
    if (lexed == Lexed::kClose) {
      // The string ends here: the matcher decides this subtree (Compute).
      if (dfa.accepting[f.b]) {
        walk->close_nodes.push_back(i);
        walk->close_bytes.insert(walk->close_bytes.end(), path_.begin() + 1, path_.begin() + d + 1);
      }
      i = t.next_[i];
      continue;
    }
    bool ok = lexed != Lexed::kBad;
    if (ok) {
      const uint32_t next = dfa.Next(f.b, b);
      ok = next != kDfaDead;
      if (ok && dfa.max_chars != kUnbounded) {
        const uint32_t chars = f.a + (lexed == Lexed::kCharStart ? 1 : 0);
        ok = uint64_t{chars} + dfa.chars_to_accept[next] <= dfa.max_chars;
        f.a = chars;
      }
      f.b = next;
    }
    if (!ok) {
      i = t.next_[i];
      continue;
    }
    for (uint32_t k = t.tok_begin_[i]; k < t.tok_end_[i]; ++k) SetBit(walk->inside, t.ids_[k]);
    ++i;
  }
}

const TokenMasker::PatternWalk& TokenMasker::PatternTokens(const GrammarMatcher::PatternTop& top) {
  const ByteDfa& dfa = *top.dfa;
  const MatchFrame& f = top.frame;
  // Whether a character budget can bind within one token: if not, the walk
  // depends on the DFA state and the lexer state alone and is cached.
  const bool budget_binds =
      dfa.max_chars != kUnbounded &&
      uint64_t{f.a} + trie_->max_depth() + dfa.max_chars_to_accept > dfa.max_chars;
  if (budget_binds) {
    WalkPattern(dfa, f, top.canonical, &scratch_walk_);
    return scratch_walk_;
  }
  const PatternKey key{dfa.uid, f.b, f.lex, f.lex_aux, f.flags, top.canonical};
  if (auto it = pattern_cache_.find(key); it != pattern_cache_.end()) {
    ++pattern_cache_hits_;
    return it->second;
  }
  if (pattern_cache_.size() >= kMaxPatternCacheEntries) pattern_cache_.clear();
  PatternWalk& walk = pattern_cache_[key];
  WalkPattern(dfa, f, top.canonical, &walk);
  return walk;
}

void TokenMasker::WalkNodes(uint32_t begin, uint32_t end, bool skip_plain, TokenBitmask* out) {
  // states_[depth_[begin] - 1] holds the matcher before begin's byte.
  const TokenTrie& t = *trie_;
  for (uint32_t i = begin; i < end;) {
    if (skip_plain && t.all_plain_[i]) {
      i = t.next_[i];  // all covered by the plain mask
      continue;
    }
    ++visited_;
    const uint8_t d = t.depth_[i];
    GrammarMatcher& cur = states_[d];
    cur.CopyFrom(states_[d - 1]);
    if (!cur.Advance(t.byte_[i])) {
      i = t.next_[i];
      continue;
    }
    for (uint32_t k = t.tok_begin_[i]; k < t.tok_end_[i]; ++k) SetBit(*out, t.ids_[k]);
    ++i;
  }
}

void TokenMasker::FinishCloses(const GrammarMatcher& m, const PatternWalk& walk,
                               TokenBitmask* out) {
  const TokenTrie& t = *trie_;
  size_t offset = 0;
  for (uint32_t node : walk.close_nodes) {
    const uint8_t d = t.depth_[node];
    const std::string_view before(reinterpret_cast<const char*>(walk.close_bytes.data()) + offset,
                                  d - 1u);
    offset += d;
    states_[d - 1].CopyFrom(m);
    if (states_[d - 1].AdvanceBytes(before)) WalkNodes(node, t.next_[node], false, out);
  }
}

void TokenMasker::Compute(const GrammarMatcher& m, TokenBitmask* out) {
  const TokenTrie& t = *trie_;
  out->assign(t.words_, 0);
  const int64_t budget = m.PlainStringBudget();
  if (budget >= 0) {
    // Every plain token within the budget: the precomputed mask up to
    // kMaxPlainChars code points, then the few longer ones that fit (all of
    // them only when none is longer than the budget).
    constexpr int kMax = TokenTrie::kMaxPlainChars;
    const bool all = t.long_plain_.empty() || budget >= t.long_plain_.back().first;
    const auto& plain = t.plain_upto_[all ? kMax + 1 : std::min<int64_t>(budget, kMax)];
    for (size_t w = 0; w < t.words_; ++w) (*out)[w] |= plain[w];
    if (!all && budget > kMax)
      for (const auto& [chars, id] : t.long_plain_) {
        if (chars > budget) break;
        SetBit(*out, id);
      }
  }
  visited_ = 0;
  if (m.PatternStrings(&pattern_tops_)) {
    // Tokens inside the strings come from each thread's DFA walk (no
    // thread splits there, so the union is exact); each token that closes
    // a string is finished by the whole matcher from its closing byte.
    if (pattern_tops_.size() == 1) {
      const PatternWalk& walk = PatternTokens(pattern_tops_[0]);
      for (size_t w = 0; w < t.words_; ++w) (*out)[w] |= walk.inside[w];
      FinishCloses(m, walk, out);
    } else {
      merged_closes_.close_nodes.clear();
      merged_closes_.close_bytes.clear();
      for (const auto& top : pattern_tops_) {
        const PatternWalk& walk = PatternTokens(top);
        for (size_t w = 0; w < t.words_; ++w) (*out)[w] |= walk.inside[w];
        size_t offset = 0;
        for (uint32_t node : walk.close_nodes) {
          const uint8_t d = t.depth_[node];
          if (!close_seen_[node]) {
            close_seen_[node] = 1;
            merged_closes_.close_nodes.push_back(node);
            merged_closes_.close_bytes.insert(merged_closes_.close_bytes.end(),
                                              walk.close_bytes.begin() + offset,
                                              walk.close_bytes.begin() + offset + d);
          }
          offset += d;
        }
      }
      for (uint32_t node : merged_closes_.close_nodes) close_seen_[node] = 0;
      FinishCloses(m, merged_closes_, out);
    }
  } else if (!m.Finished()) {
    states_[0].CopyFrom(m);
    WalkNodes(1, static_cast<uint32_t>(t.byte_.size()), /*skip_plain=*/budget >= 0, out);
  }
  if (m.CanEnd())
    for (int32_t id : t.eog_) SetBit(*out, id);
}

void TokenMasker::ComputeReference(const TokenVocab& token_vocab, const GrammarMatcher& m,
                                   TokenBitmask* out) {
  const int32_t vocab = token_vocab.size();
  out->assign((static_cast<size_t>(vocab) + 63) / 64, 0);
  GrammarMatcher copy;
  for (int32_t id = 0; id < vocab; ++id) {
    if (token_vocab.kinds[id] == TokenVocab::Kind::kEog) {
      if (m.CanEnd()) SetBit(*out, id);
      continue;
    }
    if (token_vocab.kinds[id] == TokenVocab::Kind::kControl) continue;
    const std::string& piece = token_vocab.pieces[id];
    if (piece.empty() || piece.size() > 255) continue;
    copy.CopyFrom(m);
    if (copy.AdvanceBytes(piece)) SetBit(*out, id);
  }
}

void ExpandMask(const TokenBitmask& bits, size_t vocab, std::vector<uint8_t>* out) {
  out->assign(vocab, 0);
  const size_t n = std::min(vocab, bits.size() * 64);
  for (size_t i = 0; i < n; ++i) (*out)[i] = (bits[i / 64] >> (i % 64)) & 1;
}

}  // namespace brisk

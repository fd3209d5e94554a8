#include "grammar/cfg.h"

#include <algorithm>

namespace brisk {
namespace {

constexpr int64_t kMaxRepeat = 100000;
// x{m,n}: n - m optional repeats, each a rule the Earley start set predicts.
constexpr int64_t kMaxRepeatSpan = 1000;

int Utf8Len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void Encode(uint32_t cp, uint8_t* b) {
  switch (Utf8Len(cp)) {
    case 1: b[0] = static_cast<uint8_t>(cp); break;
    case 2:
      b[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
      b[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    case 3:
      b[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
      b[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      b[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
      break;
    default:
      b[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
      b[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
      b[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
      b[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  }
}

// [lo, hi] of one encoded length: split until every byte position ranges
// independently of the others.
void SplitSameLength(uint32_t lo, uint32_t hi,
                     std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  const int n = Utf8Len(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low i continuation bytes
    if ((lo & ~m) == (hi & ~m)) continue;
    if ((lo & m) != 0) {
      SplitSameLength(lo, lo | m, out);
      SplitSameLength((lo | m) + 1, hi, out);
      return;
    }
    if ((hi & m) != m) {
      SplitSameLength(lo, (hi & ~m) - 1, out);
      SplitSameLength(hi & ~m, hi, out);
      return;
    }
  }
  uint8_t a[4], b[4];
  Encode(lo, a);
  Encode(hi, b);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (int i = 0; i < n; ++i) seq.emplace_back(a[i], b[i]);
  out->push_back(std::move(seq));
}

}  // namespace

size_t DecodeUtf8Char(std::string_view s, size_t i, uint32_t* cp) {
  if (i >= s.size()) return 0;
  const auto b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t n = 0;
  uint32_t v = 0, min = 0;
  if ((b0 & 0xE0) == 0xC0)
    n = 2, v = b0 & 0x1F, min = 0x80;
  else if ((b0 & 0xF0) == 0xE0)
    n = 3, v = b0 & 0x0F, min = 0x800;
  else if ((b0 & 0xF8) == 0xF0)
    n = 4, v = b0 & 0x07, min = 0x10000;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    v = (v << 6) | (b & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

void Utf8RangeSequences(uint32_t lo, uint32_t hi,
                        std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  hi = std::min<uint32_t>(hi, 0x10FFFF);
  while (lo <= hi) {
    if (lo >= 0xD800 && lo <= 0xDFFF) {  // surrogates are not characters
      lo = 0xE000;
      continue;
    }
    uint32_t end = hi;
    for (uint32_t bound : {0x7Fu, 0x7FFu, 0xD7FFu, 0xFFFFu})
      if (lo <= bound && end > bound) end = bound;
    SplitSameLength(lo, end, out);
    if (end == hi) break;
    lo = end + 1;
  }
}

bool CfgBuilder::Budget(size_t more) {
  total_syms_ += more;
  if (total_syms_ > kMaxCfgSymbols || alts_.size() > kMaxCfgRules) {
    Fail(
        InvalidArgument("the grammar is too large (over {} symbols or {} rules after expanding "
                        "repetitions)",
                        kMaxCfgSymbols, kMaxCfgRules));
    return false;
  }
  return true;
}

uint32_t CfgBuilder::NewRule(std::string name) {
  if (alts_.size() >= kMaxCfgRules) {
    Budget(0);
    return 0;  // the error sticks; rule 0 stands in
  }
  names_.push_back(std::move(name));
  alts_.emplace_back();
  return static_cast<uint32_t>(alts_.size() - 1);
}

void CfgBuilder::AddAlt(uint32_t rule, std::vector<uint32_t> syms) {
  if (!Budget(syms.size() + 1) || rule >= alts_.size()) return;
  alts_[rule].push_back(std::move(syms));
}

uint32_t CfgBuilder::Terminal(const ByteSet& set) {
  for (size_t i = 0; i < sets_.size(); ++i)
    if (sets_[i] == set) return kTerminalBit | static_cast<uint32_t>(i);
  sets_.push_back(set);
  return kTerminalBit | static_cast<uint32_t>(sets_.size() - 1);
}

uint32_t CfgBuilder::Byte(uint8_t b) {
  ByteSet s{};
  ByteSetAdd(s, b, b);
  return Terminal(s);
}

void CfgBuilder::AppendLiteral(std::string_view bytes, std::vector<uint32_t>* seq) {
  for (char c : bytes) seq->push_back(Byte(static_cast<uint8_t>(c)));
}

uint32_t CfgBuilder::CodePointClass(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                    bool negate) {
  for (auto& r : ranges) r.second = std::min<uint32_t>(r.second, 0x10FFFF);
  std::erase_if(ranges, [](const auto& r) { return r.first > r.second; });
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  if (negate) {
    std::vector<std::pair<uint32_t, uint32_t>> comp;
    uint32_t next = 0;
    for (const auto& r : merged) {
      if (r.first > next) comp.emplace_back(next, r.first - 1);
      next = r.second + 1;
    }
    if (next <= 0x10FFFF) comp.emplace_back(next, 0x10FFFF);
    merged = std::move(comp);
  }
  ByteSet ascii{};
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> seqs;
  for (const auto& [lo, hi] : merged) {
    if (lo < 0x80)
      ByteSetAdd(ascii, static_cast<uint8_t>(lo),
                 static_cast<uint8_t>(std::min<uint32_t>(hi, 0x7F)));
    if (hi >= 0x80) Utf8RangeSequences(std::max<uint32_t>(lo, 0x80), hi, &seqs);
  }
  if (seqs.empty()) return Terminal(ascii);  // possibly the empty set: matches nothing
  const uint32_t rule = NewRule("class");
  if (ascii != ByteSet{}) AddAlt(rule, {Terminal(ascii)});
  for (const auto& seq : seqs) {
    std::vector<uint32_t> syms;
    for (const auto& [a, b] : seq) {
      ByteSet s{};
      ByteSetAdd(s, a, b);
      syms.push_back(Terminal(s));
    }
    AddAlt(rule, std::move(syms));
  }
  return rule;
}

uint32_t CfgBuilder::Star(uint32_t x) {
  const uint32_t r = NewRule("star");
  AddAlt(r, {});
  AddAlt(r, {r, x});
  return r;
}

uint32_t CfgBuilder::Plus(uint32_t x) {
  const uint32_t r = NewRule("plus");
  AddAlt(r, {x});
  AddAlt(r, {r, x});
  return r;
}

uint32_t CfgBuilder::Optional(uint32_t x) {
  const uint32_t r = NewRule("opt");
  AddAlt(r, {});
  AddAlt(r, {x});
  return r;
}

uint32_t CfgBuilder::Group(std::vector<uint32_t> seq) {
  const uint32_t r = NewRule("group");
  AddAlt(r, std::move(seq));
  return r;
}

uint32_t CfgBuilder::Repeat(uint32_t x, int64_t min, int64_t max) {
  if (min < 0 || min > kMaxRepeat || max > kMaxRepeat || (max >= 0 && max < min)) {
    Fail(InvalidArgument("repetition {{{},{}}} is out of range (0 <= min <= max <= {})", min, max,
                         kMaxRepeat));
    return x;
  }
  if (max > min && max - min > kMaxRepeatSpan) {
    Fail(
        InvalidArgument("repetition {{{},{}}}: at most {} optional repeats (max - min) are "
                        "supported",
                        min, max, kMaxRepeatSpan));
    return x;
  }
  if (!Budget(static_cast<size_t>(min) + static_cast<size_t>(max < 0 ? 0 : max - min) * 5))
    return x;
  std::vector<uint32_t> seq(static_cast<size_t>(min), x);
  if (max < 0) {
    seq.push_back(Star(x));
  } else if (max > min) {
    // x{0,k} = e | L_1 | ... | L_k with L_1 ::= x and L_j ::= L_{j-1} x
    // (exactly j): unambiguous and left-nested, so a byte completes one
    // L_j, not a chain of k nested rules.
    const uint32_t t = NewRule("rep");
    AddAlt(t, {});
    uint32_t prev = NewRule("rep1");
    AddAlt(prev, {x});
    AddAlt(t, {prev});
    for (int64_t j = 2; j <= max - min; ++j) {
      const uint32_t l = NewRule("repn");
      AddAlt(l, {prev, x});
      AddAlt(t, {l});
      prev = l;
    }
    seq.push_back(t);
  }
  return Group(std::move(seq));
}

Expected<std::shared_ptr<const CfgGrammar>> CfgBuilder::Finish(uint32_t root) {
  if (!error_.ok()) return error_;
  const size_t n = alts_.size();
  if (root >= n) return InvalidArgument("no root rule");
  const auto sym_ok = [&](uint32_t s, const std::vector<uint8_t>& productive) {
    if (s & kTerminalBit) return sets_[s & kSymbolMask] != ByteSet{};
    return productive[s] != 0;
  };
  std::vector<uint8_t> productive(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (productive[r]) continue;
      for (const auto& alt : alts_[r]) {
        if (std::all_of(alt.begin(), alt.end(),
                        [&](uint32_t s) { return sym_ok(s, productive); })) {
          productive[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  if (!productive[root])
    return InvalidArgument("the grammar matches no text: rule '{}' derives no finite string",
                           names_[root]);
  auto g = std::make_shared<CfgGrammar>();
  g->byte_sets = sets_;
  g->rule_names = names_;
  g->rule_names.push_back("$start");
  for (size_t r = 0; r < n; ++r) {
    g->rule_first.push_back(static_cast<uint32_t>(g->prod_start.size()));
    for (const auto& alt : alts_[r]) {
      if (!std::all_of(alt.begin(), alt.end(), [&](uint32_t s) { return sym_ok(s, productive); }))
        continue;
      g->prod_start.push_back(static_cast<uint32_t>(g->syms.size()));
      g->syms.insert(g->syms.end(), alt.begin(), alt.end());
      g->syms.push_back(kEndBit | static_cast<uint32_t>(r));
    }
  }
  g->start_rule = static_cast<uint32_t>(n);
  g->rule_first.push_back(static_cast<uint32_t>(g->prod_start.size()));
  g->start_pos = static_cast<uint32_t>(g->syms.size());
  g->prod_start.push_back(g->start_pos);
  g->syms.push_back(root);
  g->syms.push_back(kEndBit | g->start_rule);
  g->rule_first.push_back(static_cast<uint32_t>(g->prod_start.size()));
  g->nullable.assign(n + 1, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r <= n; ++r) {
      if (g->nullable[r]) continue;
      for (uint32_t p = g->rule_first[r]; p < g->rule_first[r + 1]; ++p) {
        bool all = true;
        for (uint32_t i = g->prod_start[p]; !(g->syms[i] & kEndBit); ++i)
          if ((g->syms[i] & kTerminalBit) || !g->nullable[g->syms[i]]) {
            all = false;
            break;
          }
        if (all) {
          g->nullable[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  return std::shared_ptr<const CfgGrammar>(std::move(g));
}

Expected<std::shared_ptr<const CfgGrammar>> CompileChoice(const std::vector<std::string>& choices) {
  if (choices.empty()) return InvalidArgument("the choice list is empty");
  CfgBuilder b;
  const uint32_t root = b.NewRule("root");
  for (const auto& c : choices) {
    std::vector<uint32_t> seq;
    b.AppendLiteral(c, &seq);
    b.AddAlt(root, std::move(seq));
  }
  return b.Finish(root);
}

}  // namespace brisk

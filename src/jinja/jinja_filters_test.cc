// Jinja filters, tests and the str/list/dict methods templates call, one
// family per test. Every expected output is what Python jinja2 renders for
// the same template as HF transformers configures it (tojson is json.dumps
// with ensure_ascii=False); errors must be errors on both sides.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "jinja/interpreter.h"
#include "jinja/parser.h"
#include "jinja/value.h"

namespace brisk::jinja {
namespace {

using OJson = nlohmann::ordered_json;

// Renders `source` with `context` (a JSON object); errors come back as
// "ERROR <status>".
std::string R(std::string_view source, const OJson& context = OJson::object()) {
  auto tmpl = ParseTemplate(source);
  if (!tmpl.ok()) return "PARSE " + tmpl.status().ToString();
  auto ctx = Value::FromJson(context);
  if (!ctx.ok()) return "CONTEXT " + ctx.status().ToString();
  Interpreter interp(RenderLimits{});
  auto out = interp.Render(**tmpl, *ctx);
  if (!out.ok()) return "ERROR " + out.status().ToString();
  return *out;
}

// The message of a render that must fail with InvalidArgument. Positions
// name the filter, test, operator or call parenthesis that failed.
std::string Err(std::string_view source, const OJson& context = OJson::object()) {
  auto tmpl = ParseTemplate(source);
  if (!tmpl.ok()) return "PARSE " + tmpl.status().ToString();
  auto ctx = Value::FromJson(context);
  if (!ctx.ok()) return "CONTEXT " + ctx.status().ToString();
  Interpreter interp(RenderLimits{});
  auto out = interp.Render(**tmpl, *ctx);
  if (out.ok()) return "rendered: " + *out;
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument) << out.status().ToString();
  return out.status().message();
}

const OJson kMessages = OJson::parse(R"([
  {"role": "system", "content": "s"},
  {"role": "user", "content": "u1"},
  {"role": "assistant", "content": ""},
  {"role": "user", "content": "u2", "tool": "t"}])");

// ------------------------------------------------------------------ strings

TEST(JinjaFiltersTest, Trim) {
  EXPECT_EQ(R("[{{ '  x \\n'|trim }}][{{ '\xC2\xA0x\xE3\x80\x80'|trim }}][{{ 'xxaxx'|trim('x') }}]"
              "[{{ 42|trim }}]"),
            "[x][x][a][42]");
}

TEST(JinjaFiltersTest, CaseAndReplace) {
  EXPECT_EQ(R("{{ 'hello World'|upper }} {{ 'HeLLo'|lower }} {{ 'hello big-world (x)'|title }} "
              "{{ 'hELLO wORLD'|capitalize }} {{ 12|string ~ 'x' }} {{ none|string }}"),
            "HELLO WORLD hello Hello Big-World (X) Hello world 12x None");
  EXPECT_EQ(R("{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} "
              "{{ 'ab'|replace('', '-') }} {{ 'aaa'|replace('a', 'b', count=1) }}"),
            "bbb bba -a-b- baa");
}

TEST(JinjaFiltersTest, IndentFormatEscapeWordcountCenter) {
  EXPECT_EQ(R("{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|"
              "{{ 'a\\n\\nb'|indent(width=1, blank=true) }}|{{ 'a\\nb'|indent('> ') }}"),
            "a\n  b\n\n  c|  a\n  b|a\n \n b|a\n> b");
  EXPECT_EQ(R("{{ '%s-%d-%.2f'|format('a', 3, 1.5) }} {{ '%s!' % 'x' }} {{ '%(a)s' % {'a': 1} }} "
              "{{ '%5s|%-4d|%x|%%' % ('ab', 7, 255) }}"),
            "a-3-1.50 x! 1    ab|7   |ff|%");
  EXPECT_EQ(R("{{ '<a href=\"x\">&\\''|escape }} {{ '<b>'|safe }} {{ 'a b  c, d_e'|wordcount }} "
              "[{{ 'ab'|center(6) }}] [{{ 'abc'|center(6) }}]"),
            "&lt;a href=&#34;x&#34;&gt;&amp;&#39; <b> 4 [  ab  ] [ abc  ]");
}

// ------------------------------------------------------------------ sequences

TEST(JinjaFiltersTest, Join) {
  EXPECT_EQ(R("{{ [1, 2, 3]|join(', ') }}|{{ [1, 2, 3]|join }}|{{ 'abc'|join('-') }}|"
              "{{ users|join(',', attribute='name') }}|{{ []|join(',') }}",
              {{"users", {{{"name", "a"}}, {{"name", "b"}}}}}),
            "1, 2, 3|123|a-b-c|a,b|");
  EXPECT_EQ(Err("{{ 4|join(',') }}"), "1:6: 'int' object is not iterable");
}

TEST(JinjaFiltersTest, LengthCountsCodePoints) {
  EXPECT_EQ(R("{{ 'h\xC3\xA9llo'|length }} {{ [1, 2]|length }} {{ {'a': 1}|count }} "
              "{{ ''|length }} {{ nope|length }}"),
            "5 2 1 0 0");
  EXPECT_EQ(Err("{{ 5|length }}"), "1:6: object of type 'int' has no len()");
}

TEST(JinjaFiltersTest, Default) {
  EXPECT_EQ(R("[{{ nope|default('d') }}][{{ ''|default('e') }}][{{ ''|default('e', true) }}]"
              "[{{ none|default('n') }}][{{ nope|d }}][{{ 0|default(1, boolean=true) }}]"
              "[{{ m.x|default('mx') }}]",
              {{"m", OJson::object()}}),
            "[d][][e][None][][1][mx]");
}

TEST(JinjaFiltersTest, FirstLastMinMaxSum) {
  EXPECT_EQ(R("{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} [{{ []|first }}] "
              "{{ [3, 1, 2]|max }} {{ [3, 1, 2]|min }} {{ ['b', 'A']|max }} {{ [1, 2, 3]|sum }} "
              "{{ us|sum(attribute='n') }} {{ [0.5, 1]|sum(start=10) }}",
              {{"us", {{{"n", 2}}, {{"n", 1}}}}}),
            "1 3 a [] 3 1 b 6 3 11.5");
  EXPECT_FALSE(Err("{{ ['a', 'b']|sum }}").empty());
}

TEST(JinjaFiltersTest, ListItemsReverse) {
  EXPECT_EQ(R("{{ {'a': 1, 'b': [2]}|items|list }} {{ 'ab'|list }} {{ {'k': 1, 'j': 2}|list }} "
              "{{ (1, 2)|list }}"),
            "[('a', 1), ('b', [2])] ['a', 'b'] ['k', 'j'] [1, 2]");
  EXPECT_EQ(R("{{ [1, 2]|reverse|list }} {{ 'h\xC3\xA9llo'|reverse }}"), "[2, 1] oll\xC3\xA9h");
}

TEST(JinjaFiltersTest, SortUniqueDictsort) {
  EXPECT_EQ(R("{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} "
              "{{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ [3, 1]|sort(reverse=true) }} "
              "{{ us|sort(attribute='n')|map(attribute='n')|list }} {{ [1, 2, 1, 3]|unique|list }} "
              "{{ ['a', 'A', 'b']|unique|list }}",
              {{"us", {{{"n", 2}}, {{"n", 1}}}}}),
            "[1, 2, 3] ['A', 'b', 'c'] ['A', 'b', 'c'] [3, 1] [1, 2] [1, 2, 3] ['a', 'b']");
  EXPECT_EQ(R("{{ {'b': 1, 'a': 2}|dictsort }} {{ {'b': 1, 'a': 2}|dictsort(by='value') }} "
              "{{ {'b': 1, 'a': 2}|dictsort(reverse=true) }}"),
            "[('a', 2), ('b', 1)] [('b', 1), ('a', 2)] [('b', 1), ('a', 2)]");
  EXPECT_EQ(Err("{{ [1, 'a']|sort }}"),
            "1:13: '<' not supported between instances of 'str' and 'int'");
  EXPECT_FALSE(Err("{{ [1]|dictsort }}").empty());
}

// ------------------------------------------------------------------ map / select

TEST(JinjaFiltersTest, Map) {
  EXPECT_EQ(R("{{ [1, 2]|map('string')|join('|') }} {{ ['a', 'b']|map('upper')|list }} "
              "{{ users|map(attribute='age', default=0)|list }} "
              "{{ users|map(attribute='age')|list }}",
              {{"users", {{{"age", 3}}, OJson::object()}}}),
            "1|2 ['A', 'B'] [3, 0] [3, Undefined]");
  // Filter arguments pass through; attribute paths index lists and dicts.
  EXPECT_EQ(R("{{ ['x', 'y']|map('replace', 'x', 'z')|list }} "
              "{{ pairs|map(attribute='1')|list }} {{ m|map(attribute='a.b')|list }}",
              {{"pairs", {{1, 2}, {3, 4}}}, {"m", {{{"a", {{"b", 7}}}}}}}),
            "['z', 'y'] [2, 4] [7]");
  EXPECT_EQ(Err("{{ [1]|map|list }}"), "1:8: map needs a filter name or attribute=");
}

TEST(JinjaFiltersTest, SelectAndReject) {
  EXPECT_EQ(R("{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('odd')|list }} "
              "{{ [0, 1, '', 'a', none]|select|list }} {{ [1, 5, 10]|select('gt', 4)|list }} "
              "{{ ['a', 'b']|reject('equalto', 'a')|list }} "
              "{{ [1, 2, 3]|select('in', [2, 3])|list }}"),
            "[1, 3] [2, 4] [1, 'a'] [5, 10] ['b'] [2, 3]");
}

TEST(JinjaFiltersTest, SelectattrAndRejectattr) {
  EXPECT_EQ(R("{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }}|"
              "{{ ms|rejectattr('role', 'eq', 'user')|map(attribute='role')|list }}|"
              "{{ ms|selectattr('content')|list|length }}|{{ ms|selectattr('tool')|list|length }}|"
              "{{ ms|selectattr('tool', 'defined')|map(attribute='tool')|list }}",
              {{"ms", kMessages}}),
            "u1,u2|['system', 'assistant']|3|1|['t']");
}

// ------------------------------------------------------------------ numbers

TEST(JinjaFiltersTest, NumberConversions) {
  EXPECT_EQ(R("{{ '42'|int + 1 }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} "
              "{{ -3.9|int }} {{ ' 12 '|int }} {{ '2.5'|float }} {{ 3|float }} {{ 'y'|float }} "
              "{{ true|int }} {{ none|int(5) }}"),
            "43 4 0 7 3 -3 12 2.5 3.0 0.0 1 5");
  EXPECT_EQ(R("{{ -3|abs }} {{ -2.5|abs }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} "
              "{{ 2.1|round(method='ceil') }} {{ 2.9|round(0, 'floor') }}"),
            "3 2.5 2.57 2.0 4.0 3.0 2.0");
  EXPECT_FALSE(Err("{{ 'a'|round }}").empty());
}

// ------------------------------------------------------------------ tojson

TEST(JinjaFiltersTest, TojsonIsJsonDumpsWithoutAsciiEscaping) {
  OJson d = {{"b", "\xC3\xA9\xF0\x9F\x98\x80"}, {"a", {1, 2.5, nullptr, true, false}}};
  EXPECT_EQ(R("{{ d|tojson }}", {{"d", d}}),
            "{\"b\": \"\xC3\xA9\xF0\x9F\x98\x80\", \"a\": [1, 2.5, null, true, false]}");
  EXPECT_EQ(R("{{ d|tojson(ensure_ascii=false) }}", {{"d", d}}),
            "{\"b\": \"\xC3\xA9\xF0\x9F\x98\x80\", \"a\": [1, 2.5, null, true, false]}");
  EXPECT_EQ(R("{{ d|tojson(ensure_ascii=true) }}", {{"d", d}}),
            "{\"b\": \"\\u00e9\\ud83d\\ude00\", \"a\": [1, 2.5, null, true, false]}");
  EXPECT_EQ(R("{{ 'a\"b\\\\c\\n\\u0001'|tojson }}"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

TEST(JinjaFiltersTest, TojsonOptions) {
  OJson d = {{"b", "\xC3\xA9"}, {"a", {1, OJson::object()}}, {"c", OJson::array()}};
  EXPECT_EQ(R("{{ d|tojson(indent=2) }}", {{"d", d}}),
            "{\n  \"b\": \"\xC3\xA9\",\n  \"a\": [\n    1,\n    {}\n  ],\n  \"c\": []\n}");
  OJson e = {{"b", 1}, {"a", {1, 2}}};
  EXPECT_EQ(R("{{ d|tojson(sort_keys=true) }}|{{ d|tojson(separators=(',', ':')) }}", {{"d", e}}),
            "{\"a\": [1, 2], \"b\": 1}|{\"b\":1,\"a\":[1,2]}");
  EXPECT_EQ(Err("{{ nope|tojson }}"), "1:9: Object of type Undefined is not JSON serializable");
}

// ------------------------------------------------------------------ tests

TEST(JinjaFiltersTest, Tests) {
  EXPECT_EQ(R("{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 'ab' is lower }}"
              "{{ 'AB' is upper }}{{ 1 is eq 1 }}{{ 1 is equalto 2 }}{{ 2 is gt 1 }}"
              "{{ 1 is lt 2 }}{{ 2 is in [1, 2] }}{{ true is true }}{{ 0 is false }}"
              "{{ 1 is ne 2 }}{{ nope is defined }}{{ none is none }}{{ {} is mapping }}"
              "{{ 'upper' is filter }}{{ 'odd' is test }}{{ 'x' is filter }}"),
            "TrueTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueFalseTrueFalseTrueTrueTrueTrueFalse");
  EXPECT_FALSE(Err("{{ 4 is divisibleby 0 }}").empty());
}

// ------------------------------------------------------------------ methods

TEST(JinjaFiltersTest, DictAndListMethods) {
  EXPECT_EQ(R("{{ d.items()|list }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.get('a') }} "
              "{{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d['b'] }}",
              {{"d", {{"b", 2}, {"a", 1}}}}),
            "[('b', 2), ('a', 1)] ['b', 'a'] [2, 1] 1 None dflt 2");
  EXPECT_EQ(R("{{ [1, 2, 1].count(1) }} {{ [5, 6, 7].index(6) }} {{ (1, 2, 1).count(1) }}"),
            "2 1 2");
  EXPECT_FALSE(Err("{{ [5, 6].index(9) }}").empty());
}

TEST(JinjaFiltersTest, MutatingMethodsAreRefused) {
  EXPECT_EQ(Err("{% set l = [1] %}{{ l.append(2) }}"),
            "1:29: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(Err("{% set d = {} %}{{ d.update({'a': 1}) }}"),
            "1:28: access to attribute 'update' of 'dict' object is unsafe.");
  EXPECT_EQ(Err("{{ d.pop('a') }}", {{"d", {{"a", 1}}}}),
            "1:9: access to attribute 'pop' of 'dict' object is unsafe.");
}

TEST(JinjaFiltersTest, StringMethods) {
  EXPECT_EQ(R("[{{ '  a b  '.strip() }}][{{ 'xxaxx'.lstrip('x') }}][{{ 'a\\n'.rstrip() }}]"
              "{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}"
              "{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a b c'.split(' ', 1) }}"
              "{{ 'a,b,c'.rsplit(',', 1) }}"),
            "[a b][axx][a]TrueTrue['a', 'b', '', 'c']['a', 'b']['a', 'b c']['a,b', 'c']");
  EXPECT_EQ(R("{{ '{} and {}'.format(1, 'b') }} {{ '{0}{1}{0}'.format('a', 'b') }} "
              "{{ '{x}!'.format(x=5) }} {{ '{{literal}}'.format() }} {{ '{!r}'.format('q') }} "
              "{{ 'abc'.removeprefix('a') }} {{ 'abc'.removesuffix('c') }} "
              "{{ 'aBc'.swapcase() }}"),
            "1 and b aba 5! {literal} 'q' bc ab AbC");
}

// ------------------------------------------------------------------ errors

TEST(JinjaFiltersTest, UnknownFiltersAndTestsAreErrors) {
  EXPECT_EQ(Err("{{ 1|no_such_filter }}"), "1:6: no filter named 'no_such_filter'");
  EXPECT_EQ(Err("{{ 1 is no_such_test }}"), "1:6: no test named 'no_such_test'");
}

}  // namespace
}  // namespace brisk::jinja

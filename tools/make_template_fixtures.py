#!/usr/bin/env python3
"""Renders the chat-template fixtures the C++ test (src/model/chat_template_test.cc)
compares against byte for byte.

Each tests/fixtures/chat_templates/*.jinja is a real model's `chat_template`:
  - smollm2_135m_instruct.jinja: read from models/SmolLM2-135M-Instruct.Q4_1.gguf
    (GGUF key tokenizer.chat_template) by this script when the model is present;
  - the others as shipped by the models (the templates TRL's chat_templates/
    directory keeps for identity checks, and for Llama 2 chat, Mistral Instruct
    v0.1/v0.3 and Zephyr the text of their tokenizer_config.json).

This script renders every template over a fixed set of conversations with
Python jinja2 set up exactly as HF transformers' apply_chat_template does
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
{% generation %}, raise_exception, strftime_now, json.dumps-based tojson) and
writes expected.json: an output string, or the error the template raised.

Usage: python3 tools/make_template_fixtures.py   (needs: jinja2; gguf for SmolLM2)
"""

import datetime
import json
import os
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "chat_templates")
GGUF = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")

# strftime_now() is pinned so the fixtures do not change with the date
# (noon UTC: the same calendar day in every time zone from UTC-11 to UTC+11).
NOW_UNIX_SECONDS = 1721995200  # 2024-07-26 12:00:00 UTC

# Special tokens per template (bos, eos) as the models' tokenizers define them.
TOKENS = {
    "smollm2_135m_instruct": ("<|im_start|>", "<|im_end|>"),
    "llama2_chat": ("<s>", "</s>"),
    "llama3_instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3_1_instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3_2_instruct": ("<|begin_of_text|>", "<|eot_id|>"),
    "mistral_instruct_v0_1": ("<s>", "</s>"),
    "mistral_instruct_v0_3": ("<s>", "</s>"),
    "zephyr_7b_beta": ("<s>", "</s>"),
    "gemma2_it": ("<bos>", "<eos>"),
    "gemma3_it": ("<bos>", "<eos>"),
    "gemma4": ("<bos>", "<eos>"),
    "phi3_mini_instruct": ("<s>", "<|endoftext|>"),
    "phi3_5_mini_instruct": ("<s>", "<|endoftext|>"),
    "qwen2_5_instruct": ("", "<|im_end|>"),
    "qwen2_5_vl": ("", "<|im_end|>"),
    "qwen3": ("", "<|im_end|>"),
    "qwen3_5": ("", "<|im_end|>"),
    "qwen3_instruct_2507": ("", "<|im_end|>"),
    "qwen3_vl": ("", "<|im_end|>"),
    "deepseek_r1_distill": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "deepseek_v3": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "gpt_oss": ("<|startoftext|>", "<|return|>"),
    "cohere": ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    "cohere2": ("<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    "glm4_moe": ("", "<|endoftext|>"),
    "lfm2": ("<|startoftext|>", "<|im_end|>"),
    "lfm2_5": ("<|startoftext|>", "<|im_end|>"),
    "idefics3": ("<|begin_of_text|>", "<end_of_utterance>"),
    "llava_next": ("<s>", "</s>"),
    "smolvlm": ("<|im_start|>", "<end_of_utterance>"),
    "muse_glimmer": ("", ""),
    "nemotron_3_nano": ("<s>", "<|im_end|>"),
}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}

# Conversations. Only `messages` and `add_generation_prompt` (plus tools or
# custom variables where named) vary; bos/eos come from TOKENS, and tools and
# documents default to None as in apply_chat_template.
CASES = {
    "user_only": {
        "messages": [{"role": "user", "content": "Hello!"}],
        "add_generation_prompt": True,
    },
    "system_user": {
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is 2+2?"},
        ],
        "add_generation_prompt": True,
    },
    "multi_turn": {
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Name a color."},
            {"role": "assistant", "content": "Blue."},
            {"role": "user", "content": "Another one?"},
        ],
        "add_generation_prompt": True,
    },
    "multi_turn_no_generation_prompt": {
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello! How can I help?"},
            {"role": "user", "content": "Tell me a joke."},
            {"role": "assistant", "content": "Why did the chicken cross the road?"},
        ],
        "add_generation_prompt": False,
    },
    "unicode": {
        "messages": [
            {"role": "user", "content": "Héllo wörld — 你好 🌍\u00a0"},
            {"role": "assistant", "content": "\u3000 Bonjour ! 👋\n\n"},
            {"role": "user", "content": "日本語で答えて\t\"quoted\" \\ back"},
        ],
        "add_generation_prompt": True,
    },
    "whitespace": {
        "messages": [
            {"role": "user", "content": "  leading and trailing  \n"},
            {"role": "assistant", "content": "\n\nmulti\nline\n  "},
            {"role": "user", "content": ""},
        ],
        "add_generation_prompt": False,
    },
    "tools": {
        "messages": [
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": "What's the weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call12345",
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "arguments": {"city": "Paris", "unit": "celsius"},
                        },
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "call12345",
                "name": "get_weather",
                "content": '{"temperature": 22, "condition": "sunny"}',
            },
        ],
        "tools": [WEATHER_TOOL],
        "add_generation_prompt": True,
    },
    "tools_user_only": {
        "messages": [{"role": "user", "content": "Weather in Oslo?"}],
        "tools": [WEATHER_TOOL],
        "add_generation_prompt": True,
    },
    "multimodal_content": {
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "Describe images."}]},
            {
                "role": "user",
                "content": [
                    {"type": "image"},
                    {"type": "text", "text": "What is in this picture?"},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "A cat on a mat."}]},
            {"role": "user", "content": [{"type": "text", "text": "And its color?"}]},
        ],
        "add_generation_prompt": True,
    },
    "custom_variables": {
        "messages": [
            {"role": "user", "content": "Think about it."},
            {"role": "assistant", "content": "<think>\nHmm.\n</think>\n\nDone."},
            {"role": "user", "content": "Again."},
        ],
        "add_generation_prompt": True,
        "enable_thinking": False,
        "reasoning_effort": "high",
        "date_string": "01 Jan 2025",
        "custom_field": {"nested": [1, 2.5, None, True]},
    },
}


# Small templates exercising one Jinja feature each, rendered the same way
# (snippets.json); the C++ test checks each output byte for byte, or that
# both sides fail.
MSGS = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"}, {"role": "user", "content": "bye"}]
SNIPPETS = [
    # whitespace control with trim_blocks + lstrip_blocks
    ("ws_trim_blocks", "{% if true %}\nA\n{% endif %}\nB", {}),
    ("ws_lstrip_blocks", "  {% if true %}\n  x\n  {% endif %}\n", {}),
    ("ws_lstrip_not_vars", "  {{ 1 }}\n  {% if true %}y{% endif %}", {}),
    ("ws_minus", "a   {%- if true -%}   b   {%- endif -%}   c", {}),
    ("ws_minus_vars", "a \n {{- 'b' -}} \n c", {}),
    ("ws_plus", "  {%+ if true %}x{% endif +%}\ny", {}),
    ("ws_comment", "a\n  {# note #}\nb {#- x -#} c", {}),
    ("ws_crlf", "{% if true %}\r\nA\r\n{% endif %}\r\n", {}),
    ("ws_trailing_newline", "x\n", {}),
    ("ws_text_after_tag_same_line", "{% if true %}  x{% endif %}  \n", {}),
    ("ws_indented_after_text", "t  {% if true %}x{% endif %}", {}),
    ("raw_block", "{% raw %}{{ not parsed }}{% endraw %}", {}),
    ("raw_block_ws", "  {%- raw -%}  a  {%- endraw -%}  b", {}),
    # literals and printing
    ("print_scalars", "{{ none }} {{ None }} {{ true }} {{ False }} {{ 42 }} {{ -7 }} {{ 1.5 }}", {}),
    ("print_floats", "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.5e-7 }} {{ 123456789.125 }} {{ 2.0 ** 60 }} {{ 1/3 }}", {}),
    ("print_containers", "{{ [1, 'a', none, true, 2.5] }} {{ {'k': 'v', 'n': [1]} }} {{ (1, 'x') }} {{ (1,) }}", {}),
    ("print_repr_quotes", "{{ [\"it's\", 'say \"hi\"', 'a\\nb', 'tab\\t'] }}", {}),
    ("string_escapes", "{{ 'a\\tb\\\\c\\'d\\\"e\\x41\\u00e9\\U0001F600' }}", {}),
    ("string_concat_literals", "{{ 'a' 'b' \"c\" }}", {}),
    ("dict_key_order", "{{ {'b': 1, 'a': 2, 'c': {'z': 0, 'y': 1}} | tojson }}", {}),
    # operators
    ("arith", "{{ 7 + 2 }} {{ 7 - 2 }} {{ 7 * 2 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}", {}),
    ("arith_mixed", "{{ 1 + 2.5 }} {{ true + 1 }} {{ 3 * 'ab' }} {{ [1] * 3 }} {{ 'x' ~ 1 ~ none ~ undefined_var }}", {}),
    ("string_plus", "{{ 'a' + 'b' }} {{ [1, 2] + [3] }}", {}),
    ("string_plus_int_error", "{{ 'a' + 1 }}", {}),
    ("compare", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 1 != '1' }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}", {}),
    ("logic_values", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ none or [] }} {{ not 0 }} {{ not [1] }}", {}),
    ("in_operator", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} {{ 'x' in undefined_var }}", {}),
    ("precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ not true or true }} {{ 2 * 3 | string }} {{ 'a' ~ 2 * 3 }}", {}),
    ("precedence_concat_vs_plus", "{{ 'a' ~ 1 + 2 }}", {}),
    ("ternary", "{{ 'y' if true else 'n' }} {{ 'y' if false else 'n' }} [{{ 'y' if false }}]", {}),
    ("unary", "{{ -(3) }} {{ +4 }} {{ - -5 }}", {}),
    # variables, attributes, subscripts, slices
    ("attr_and_item", "{{ m.role }} {{ m['content'] }} {{ m.missing }}|{{ m['missing'] }}|{{ l[0] }} {{ l[-1] }} {{ l[9] }}|{{ l.0 }}", {"m": {"role": "user", "content": "c"}, "l": [1, 2, 3]}),
    ("slices", "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }} {{ l[5:] }} {{ s[1:3] }} {{ s[::-1] }} {{ s[-1] }}", {"l": [1, 2, 3, 4], "s": "héllo"}),
    ("undefined_prints_empty", "[{{ nope }}][{{ nope|default('d') }}][{{ nope is defined }}][{{ nope|length }}]", {}),
    ("undefined_attr_error", "{{ nope.attr }}", {}),
    ("undefined_item_error", "{{ nope[0] }}", {}),
    ("undefined_call_error", "{{ nope() }}", {}),
    ("undefined_arith_error", "{{ nope + 1 }}", {}),
    ("undefined_iterates_empty", "{% for x in nope %}x{% else %}empty{% endfor %}", {}),
    ("none_iter_error", "{% for x in n %}x{% endfor %}", {"n": None}),
    ("none_attr", "[{{ n.x }}]", {"n": None}),
    # statements
    ("if_elif_else", "{% for i in [1, 2, 3] %}{% if i == 1 %}one{% elif i == 2 %}two{% else %}many{% endif %} {% endfor %}", {}),
    ("for_loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}", {}),
    ("for_filter", "{% for m in messages if m.role != 'system' %}{{ loop.index }}:{{ m.content }}/{{ loop.length }} {% endfor %}", {"messages": MSGS}),
    ("for_else", "{% for x in [] %}x{% else %}none{% endfor %}|{% for x in [1] if false %}x{% else %}filtered{% endfor %}", {}),
    ("for_dict_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for k, v in d|items %}{{ v }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for_unpack_paren", "{% for (a, b) in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}", {}),
    ("for_nested_loop", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("break_continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("set_scoping", "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + 10 %}{{ x }},{% endfor %}{{ x }}{% if true %}{% set x = 5 %}{% endif %}{{ x }}", {}),
    ("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 3, 4 %}{{ t }}", {}),
    ("set_block", "{% set x %}  hi {{ 1 }}  {% endset %}[{{ x }}]{% set y | upper %}abc{% endset %}{{ y }}", {}),
    ("namespace", "{% set ns = namespace(n=0, found=false) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% if m.role == 'system' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.n }} {{ ns.found }}", {"messages": MSGS}),
    ("namespace_empty", "{% set ns = namespace() %}{% set ns.x = 'a' %}{{ ns.x }}{{ ns['x'] }}", {}),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} {{ greet(name='c', punct='.') }}", {}),
    ("macro_globals_and_missing", "{% macro f(a, b) %}{{ a }}-{{ b }}-{{ g }}{% endmacro %}{% set g = 'G' %}{{ f(1) }}", {}),
    ("macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}", {}),
    ("macro_too_many_args", "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1, 2) }}", {}),
    ("with_block", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
    ("filter_block", "{% filter upper %}abc {{ 'd' }}{% endfilter %}", {}),
    ("generation_block", "{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}", {"messages": MSGS}),
    ("raise_exception", "{{ raise_exception('Bad role: ' ~ 'x') }}", {}),
    ("strftime_now", "{{ strftime_now('%Y-%m-%d %d %b %Y') }}", {}),
    ("range", "{{ range(3)|list }} {{ range(1, 4)|list }} {{ range(10, 0, -3)|list }} {{ range(0)|list }}", {}),
    # filters
    ("filter_trim", "[{{ '  x \\n'|trim }}][{{ '\u00a0x\u3000'|trim }}][{{ 'xxaxx'|trim('x') }}]", {}),
    ("filter_case", "{{ 'hello World'|upper }} {{ 'HeLLo'|lower }} {{ 'hello big-world (x)'|title }} {{ 'hELLO wORLD'|capitalize }}", {}),
    ("filter_length", "{{ 'héllo'|length }} {{ [1, 2]|length }} {{ {'a': 1}|count }} {{ ''|length }}", {}),
    ("filter_tojson", "{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ 'é\\n\\u0001\"'|tojson }}|{{ [1.0, 2.5e-9, 1e100, none, true]|tojson }}|{{ {}|tojson(indent=2) }}|{{ []|tojson }}", {"d": {"z": [1, {"x": "y"}], "a": None, "u": "ü"}}),
    ("filter_tojson_options", "{{ d|tojson(sort_keys=true) }}|{{ d|tojson(separators=(',', ':')) }}|{{ d|tojson(indent='\t') }}|{{ d|tojson(ensure_ascii=true) }}", {"d": {"b": "ü😀", "a": [1, 2]}}),
    ("filter_tojson_undefined_error", "{{ nope|tojson }}", {}),
    ("filter_join", "{{ [1, 2, 3]|join(', ') }} {{ 'abc'|join('-') }} {{ users|join(',', attribute='name') }}", {"users": [{"name": "a"}, {"name": "b"}]}),
    ("filter_first_last", "{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} [{{ []|first }}]", {}),
    ("filter_default", "{{ nope|default('d') }} {{ ''|default('e') }} {{ ''|default('e', true) }} {{ none|default('n') }} {{ nope|d }}", {}),
    ("filter_replace", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'ab'|replace('', '-') }}", {}),
    ("filter_string_int_float", "{{ 12|string }} {{ '42'|int + 1 }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ '2.5'|float }} {{ 3|float }}", {}),
    ("filter_items_list", "{{ {'a': 1}|items|list }} {{ 'ab'|list }} {{ {'k': 1}|list }}", {}),
    ("filter_safe_escape", "{{ '<b>'|safe }} {{ '<a href=\"x\">&'|escape }}", {}),
    ("filter_selectattr", "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }} {{ messages|rejectattr('role', 'eq', 'user')|list|length }} {{ messages|selectattr('content')|list|length }}", {"messages": MSGS + [{"role": "user", "content": ""}]}),
    ("filter_selectattr_defined", "{{ items|selectattr('x', 'defined')|list|length }} {{ items|rejectattr('x', 'none')|list|length }}", {"items": [{"x": 1}, {"x": None}, {}]}),
    ("filter_select_reject", "{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('even')|list }} {{ [0, 1, '', 'a']|select|list }} {{ ['a', 'code_interpreter']|reject('equalto', 'code_interpreter')|list }}", {}),
    ("filter_map", "{{ [1, 2]|map('string')|join('|') }} {{ ['a', 'b']|map('upper')|list }} {{ users|map(attribute='age', default=0)|list }}", {"users": [{"age": 3}, {}]}),
    ("filter_sort_unique", "{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ [3, 1]|sort(reverse=true) }} {{ users|sort(attribute='n')|map(attribute='n')|list }} {{ [1, 2, 1, 3]|unique|list }}", {"users": [{"n": 2}, {"n": 1}]}),
    ("filter_dictsort", "{{ {'b': 1, 'a': 2}|dictsort }}", {}),
    ("filter_misc", "{{ [3, 1, 2]|max }} {{ [3, 1, 2]|min }} {{ [1, 2, 3]|sum }} {{ [1, 2]|reverse|list }} {{ 'abc'|reverse }} {{ -3|abs }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 'a b  c'|wordcount }}", {}),
    ("filter_indent", "{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(width=1, blank=true) }}", {}),
    ("filter_format", "{{ '%s-%d-%.2f'|format('a', 3, 1.5) }} {{ '%s!' % 'x' }} {{ '%(a)s' % {'a': 1} }}", {}),
    ("filter_unknown_error", "{{ 1|no_such_filter }}", {}),
    # tests
    ("tests_types", "{{ 1 is number }}{{ 1.5 is float }}{{ 1 is integer }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is sequence }}{{ 'a' is iterable }}{{ none is none }}{{ true is boolean }}{{ 1 is string }}{{ nope is undefined }}{{ nope is iterable }}{{ {} is iterable }}{{ [] is mapping }}", {}),
    ("tests_values", "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 'ab' is lower }}{{ 'AB' is upper }}{{ 1 is eq 1 }}{{ 1 is equalto 2 }}{{ 2 is gt 1 }}{{ 1 is lt 2 }}{{ 2 is in [1, 2] }}{{ true is true }}{{ 0 is false }}{{ 1 is ne 2 }}", {}),
    ("tests_not", "{{ 1 is not none }}{{ none is not none }}{{ x is not defined }}{{ not x is defined }}", {}),
    ("test_callable", "{{ range is callable }}{{ 'a' is callable }}", {}),
    # methods
    ("str_methods", "[{{ '  a b  '.strip() }}][{{ 'xxaxx'.lstrip('x') }}][{{ 'a\\n'.rstrip() }}]{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a b c'.split(' ', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}", {}),
    ("str_methods_2", "{{ 'Hello'.upper() }}{{ 'Hello'.lower() }}{{ 'hello world'.title() }}{{ 'they\\'re 3rd'.title() }}{{ 'hELLO'.capitalize() }}{{ 'aXa'.replace('a', 'b') }}{{ 'héllo'.find('l') }}{{ 'abc'.find('z') }}{{ 'aaa'.count('a') }}{{ '-'.join(['x', 'y']) }}{{ 'a\\nb\\r\\nc'.splitlines() }}", {}),
    ("str_format_method", "{{ '{} and {}'.format(1, 'b') }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{x}!'.format(x=5) }} {{ '{{literal}}'.format() }}", {}),
    ("str_is_methods", "{{ '123'.isdigit() }}{{ 'ab'.isalpha() }}{{ 'a1'.isalnum() }}{{ '  '.isspace() }}{{ ''.isdigit() }}{{ 'ab'.islower() }}{{ 'AB'.isupper() }}", {}),
    ("dict_methods", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}", {"d": {"a": 1, "b": 2}}),
    ("list_mutation_error", "{% set l = [1] %}{{ l.append(2) }}", {}),
    ("content_split_think", "{% set c = content.split('</think>')[-1].lstrip('\\n') %}[{{ c }}][{{ content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}]", {"content": "<think>\nreason\n</think>\n\nanswer"}),
    # syntax errors (both sides must fail)
    ("syntax_unclosed_if", "{% if true %}x", {}),
    ("syntax_unknown_tag", "{% frobnicate %}", {}),
    ("syntax_bad_expr", "{{ 1 + }}", {}),
    ("syntax_unclosed_var", "{{ 1 ", {}),
    ("syntax_unclosed_string", "{{ 'abc }}", {}),
    ("syntax_unclosed_comment", "{# abc", {}),
    ("syntax_stray_endfor", "{% endfor %}", {}),
    ("syntax_unbalanced_paren", "{{ (1 + 2 }}", {}),
]


class RaisedByTemplate(jinja2.exceptions.TemplateError):
    pass


class AssistantTracker(Extension):
    """{% generation %}...{% endgeneration %}: renders its body (as in HF)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise RaisedByTemplate(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(NOW_UNIX_SECONDS).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def context_for(case, bos, eos):
    ctx = {"tools": None, "documents": None}
    ctx.update(json.loads(json.dumps(case)))  # deep copy
    ctx["bos_token"] = bos
    ctx["eos_token"] = eos
    return ctx


def extract_smollm2():
    try:
        import gguf  # noqa: PLC0415
    except ImportError:
        print("gguf not installed; keeping the stored SmolLM2 template", file=sys.stderr)
        return
    if not os.path.exists(GGUF):
        print(f"{GGUF} missing; keeping the stored SmolLM2 template", file=sys.stderr)
        return
    reader = gguf.GGUFReader(GGUF)
    field = reader.fields["tokenizer.chat_template"]
    text = bytes(field.parts[field.data[0]]).decode("utf-8")
    with open(os.path.join(FIXTURES, "smollm2_135m_instruct.jinja"), "w", encoding="utf-8") as f:
        f.write(text)


def main():
    extract_smollm2()
    env = make_env()
    templates = {}
    for fname in sorted(os.listdir(FIXTURES)):
        if not fname.endswith(".jinja"):
            continue
        name = fname[: -len(".jinja")]
        if name not in TOKENS:
            sys.exit(f"no special tokens listed for {fname}")
        bos, eos = TOKENS[name]
        with open(os.path.join(FIXTURES, fname), encoding="utf-8") as f:
            source = f.read()
        tmpl = env.from_string(source)
        results = {}
        for case_name, case in CASES.items():
            try:
                results[case_name] = {"output": tmpl.render(**context_for(case, bos, eos))}
            except RaisedByTemplate as e:
                results[case_name] = {"error": str(e), "raised": True}
            except Exception as e:  # noqa: BLE001 - any template failure is an expected error
                results[case_name] = {"error": f"{type(e).__name__}: {e}", "raised": False}
        templates[name] = {"file": fname, "bos_token": bos, "eos_token": eos, "results": results}
        ok = sum(1 for r in results.values() if "output" in r)
        print(f"{name:28s} {ok}/{len(results)} rendered")
    out = {
        "jinja2_version": jinja2.__version__,
        "now_unix_seconds": NOW_UNIX_SECONDS,
        "cases": CASES,
        "templates": templates,
    }
    with open(os.path.join(FIXTURES, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=True)
        f.write("\n")

    snippets = []
    for name, source, ctx in SNIPPETS:
        entry = {"name": name, "template": source, "context": ctx}
        try:
            entry["output"] = env.from_string(source).render(**ctx)
        except RaisedByTemplate as e:
            entry.update(error=str(e), raised=True)
        except Exception as e:  # noqa: BLE001 - syntax and runtime errors are both expected
            entry.update(error=f"{type(e).__name__}: {e}", raised=False)
        snippets.append(entry)
    with open(os.path.join(FIXTURES, "snippets.json"), "w", encoding="utf-8") as f:
        json.dump({"now_unix_seconds": NOW_UNIX_SECONDS, "snippets": snippets}, f, indent=1,
                  ensure_ascii=True)
        f.write("\n")
    print(f"{len(snippets)} snippets")


if __name__ == "__main__":
    main()

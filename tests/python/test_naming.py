"""tracer._naming: module paths -> range names (pure, needs no torch)."""

import re
import unittest

import tracer_testing  # noqa: F401  (sys.path)
from tracer._naming import ModuleName, parse_module_path, range_name, sanitize_adapter


def adapters_at(path: str, *keys: str) -> set:
    """Positions of the given parts, as annotate() finds ModuleDict keys."""
    parts = path.split(".")
    return {i for i, p in enumerate(parts) if p in keys}


class NamingTest(unittest.TestCase):
    def test_seed_example(self):
        path = "layers.3.attention.wq.lora_a.alpaca"
        self.assertEqual(range_name(path, "f_", adapters_at(path, "alpaca")), "f_lora_a_alpaca_3")
        self.assertEqual(range_name(path, "b_", adapters_at(path, "alpaca")), "b_lora_a_alpaca_3")

    def test_layer_and_plain_names(self):
        self.assertEqual(range_name("layers.0.attention_norm", "f_"), "f_attention_norm_0")
        self.assertEqual(range_name("layers.11.q.linear_wq", "f_"), "f_linear_wq_11")
        self.assertEqual(range_name("embedding", "f_"), "f_embedding")
        self.assertEqual(range_name("layers.7", "f_"), "f_layers_7")
        self.assertIsNone(range_name("", "f_"))

    def test_parts_are_separate(self):
        name = parse_module_path("layers.2.q.lora_b.gsm", {4})
        self.assertEqual(name, ModuleName(base="lora_b", adapter="gsm", layer=2))
        self.assertEqual(name.range_name(""), "lora_b_gsm_2")

    def test_nested_index_stays_distinct(self):
        # experts.5 is not a second layer id: glued to its list's name.
        self.assertEqual(range_name("layers.1.experts.5.w1", "f_"), "f_experts5_w1_1")
        self.assertEqual(range_name("layers.1.experts.5", "f_"), "f_experts5_1")
        self.assertNotEqual(
            range_name("layers.1.experts.5.w1", "f_"), range_name("layers.1.experts.6.w1", "f_")
        )

    def test_adapter_before_base(self):
        path = "layers.4.q.lora.alpaca.lora_a"
        self.assertEqual(range_name(path, "f_", adapters_at(path, "alpaca")), "f_lora_a_alpaca_4")

    def test_adapter_never_ends_in_index(self):
        self.assertEqual(sanitize_adapter("alpaca_2"), "alpaca-2")
        self.assertEqual(sanitize_adapter("v2"), "v2")
        self.assertEqual(sanitize_adapter("7"), "a7")
        path = "layers.3.q.lora_a.task_12"
        name = range_name(path, "f_", adapters_at(path, "task_12"))
        self.assertEqual(name, "f_lora_a_task-12_3")
        # The layer id is the only trailing _<digits>, so it splits one way.
        m = re.fullmatch(r"f_lora_a_(.+)_(\d+)", name)
        self.assertEqual(m.groups(), ("task-12", "3"))

    def test_bare_index_and_adapter_paths(self):
        self.assertEqual(range_name("0", "f_"), "f_0")
        self.assertEqual(range_name("alpaca", "f_", {0}), "f_alpaca")

    def test_qualified_by_enclosing_parts(self):
        # peft: one adapter module name under q_proj and v_proj.
        q = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default"
        v = q.replace("q_proj", "v_proj")
        at = adapters_at(q, "default")
        self.assertEqual(parse_module_path(q, at).range_name("f_"), "f_lora_A_default_0")
        self.assertEqual(parse_module_path(q, at, 1).range_name("f_"), "f_q_proj_lora_A_default_0")
        self.assertEqual(parse_module_path(v, at, 1).range_name("f_"), "f_v_proj_lora_A_default_0")
        self.assertEqual(parse_module_path(q, at, 2).range_name("f_"),
                         "f_self_attn_q_proj_lora_A_default_0")
        # Indices never become part of the base; more parts than there are: all of them.
        self.assertEqual(parse_module_path("layers.1.experts.5.w1", (), 1).range_name(""),
                         "layers_experts5_w1_1")
        self.assertEqual(parse_module_path("a.b", (), 9).range_name(""), "a_b")

    def test_prefixes(self):
        self.assertEqual(range_name("layers.0.w1", "fwd."), "fwd.w1_0")


if __name__ == "__main__":
    tracer_testing.main(require_torch=False)

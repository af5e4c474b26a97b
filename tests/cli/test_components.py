"""The listing printed by scripts/demo.sh reads fairseq's registries."""
from segatron_fairseq.cli.components import plugin_components


def test_listing_contains_only_plugin_entries():
    from fairseq.models import ARCH_MODEL_REGISTRY
    from fairseq.tasks import TASK_REGISTRY

    listed = plugin_components()
    assert set(listed) == {"tasks", "models", "architectures", "criterions"}
    assert "language_modeling" in TASK_REGISTRY and "language_modeling" not in listed["tasks"]
    assert "transformer_lm" in ARCH_MODEL_REGISTRY
    assert not any(a.startswith("transformer_lm ") for a in listed["architectures"])

"""Segatron-XL on a GPU: bf16 attention scores against the float64 pair-by-pair reference, the compiled
layers (``--compile-layers``) against the eager ones, and sampling with a CPU generator. Skipped without CUDA
(the CPU suite checks the same scores in float64 to 1e-6, test_segatron_attention.py)."""
from copy import deepcopy

import pytest
import torch
from test_segatron_attention import (
    BATCH,
    SEQ,
    make_decoder,
    make_stream,
    reference_scores,
    third_segment_attention_inputs,
)

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
CUDA = torch.device("cuda")


def scores_error(attention, inputs, dtype, device, expected_of_row):
    """Largest |scores - float64 reference| over the visible pairs, the scores computed in ``dtype`` on
    ``device`` from the same (rounded) inputs."""
    hidden, memory, distances, u, v, mask, _ = inputs
    attention = attention.to(device, dtype)
    cast = lambda t: t.to(device, dtype)  # noqa: E731
    distances.map_tables(cast)
    if distances.key_runs is not None:
        distances.key_runs = cast(distances.key_runs)
        distances.run_cells = distances.run_cells.to(device)
    with torch.no_grad():
        scores, _ = attention.scores(cast(hidden), cast(memory), distances, cast(u), cast(v))
    worst = 0.0
    for b in range(BATCH):
        expected = expected_of_row[b]
        visible = ~expected.isnan()
        worst = max(worst, (scores[b].double().cpu()[visible] - expected[visible]).abs().max().item())
    return worst


@pytest.mark.parametrize("sentence,paragraph,origin", [(True, True, "query"), (False, False, "query"),
                                                       (True, True, "window_end")])
def test_bf16_scores_on_gpu_within_bf16_rounding_of_the_float64_reference(sentence, paragraph, origin):
    """The GPU's bf16 scores are within 2% of the scores' range of the float64 reference, and (a heuristic
    bound) at most twice as far from it as the same computation in bf16 on the CPU."""
    decoder = make_decoder(sentence, paragraph, mem_len=5, origin=origin)
    captured, positions, flags = third_segment_attention_inputs(decoder)
    for layer_number, inputs in enumerate(captured):
        attention = decoder.layers[layer_number].attention
        hidden, memory, _, u, v, _, _ = inputs
        expected = [reference_scores(attention, torch.cat([memory[:, b], hidden[:, b]]), SEQ, positions,
                                     {k: f[b] for k, f in flags.items()}, u, v, decoder.part_dims, -1, origin)
                    for b in range(BATCH)]
        scale = max(e[~e.isnan()].abs().max().item() for e in expected)
        cpu_error = scores_error(deepcopy(attention), deepcopy(inputs), torch.bfloat16, torch.device("cpu"),
                                 expected)
        gpu_error = scores_error(deepcopy(attention), deepcopy(inputs), torch.bfloat16, CUDA, expected)
        assert gpu_error <= 2 * cpu_error + 1e-6, (layer_number, gpu_error, cpu_error)
        assert gpu_error <= 0.02 * scale, (layer_number, gpu_error, scale)


def run_segments(decoder, dtype, segments=3, train=False):
    """Features of ``segments`` consecutive segments (memory carried), and with ``train`` the gradients."""
    tokens, sentence_flags, paragraph_flags = (t.to(CUDA) for t in make_stream(segments * SEQ))
    decoder = decoder.to(CUDA, dtype).train(train)
    outputs = []
    for segment in range(segments):
        cols = slice(segment * SEQ, (segment + 1) * SEQ)
        with torch.set_grad_enabled(train):
            features = decoder.extract_features(tokens[:, cols], sentence_flags[:, cols], paragraph_flags[:, cols])
            if train:
                features.float().square().mean().backward()
        outputs.append(features.detach().double().cpu())
    grads = {name: p.grad.double().cpu() for name, p in decoder.named_parameters() if p.grad is not None}
    return torch.stack(outputs), grads


@pytest.mark.parametrize("sentence,paragraph", [(True, True), (False, False)])
def test_compiled_layers_match_eager_on_gpu(sentence, paragraph):
    """--compile-layers: float32 features and gradients equal the eager ones to 1e-4; bf16 features as close
    to the float64 CPU decoder's as eager bf16 (1.5x its error at most)."""
    reference = make_decoder(sentence, paragraph, mem_len=5)
    expected = _cpu(reference)
    torch._dynamo.reset()  # fresh caches: the compiled runs below must compile, not fall back to eager

    def model(compiled):
        decoder = deepcopy(reference)
        decoder.cfg.compile_layers = compiled
        return decoder

    eager, eager_grads = run_segments(model(False), torch.float32, train=True)
    compiled, compiled_grads = run_segments(model(True), torch.float32, train=True)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] > 0, "nothing was compiled"
    torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-4)
    assert eager_grads.keys() == compiled_grads.keys()
    for name in eager_grads:
        torch.testing.assert_close(compiled_grads[name], eager_grads[name], rtol=1e-3, atol=1e-4, msg=name)

    eager_error = (run_segments(model(False), torch.bfloat16)[0] - expected).abs().max().item()
    compiled_error = (run_segments(model(True), torch.bfloat16)[0] - expected).abs().max().item()
    assert compiled_error <= 1.5 * eager_error + 1e-6, (compiled_error, eager_error)


def _cpu(reference):
    """The float64 decoder run on the CPU: features of the same three segments."""
    tokens, sentence_flags, paragraph_flags = make_stream(3 * SEQ)
    decoder = deepcopy(reference)
    outputs = []
    with torch.no_grad():
        for segment in range(3):
            cols = slice(segment * SEQ, (segment + 1) * SEQ)
            outputs.append(decoder.extract_features(tokens[:, cols], sentence_flags[:, cols], paragraph_flags[:, cols]))
    return torch.stack(outputs)


def test_sampling_on_gpu_with_a_cpu_generator_gives_the_cpu_tokens():
    """sample_tokens with the model on the GPU and a seeded CPU generator: the tokens the CPU model draws."""
    from segatron_fairseq.generation.sampling import sample_tokens

    decoder = make_decoder(True, True, mem_len=5).float()
    model = torch.nn.Module()
    model.decoder = decoder
    model.reset_memory = decoder.reset_memory
    model.get_normalized_probs = lambda net_output, log_probs: decoder.get_normalized_probs(net_output, log_probs)

    def draw(device):
        model.to(device)
        return sample_tokens(model, [5, 6, 7], [(True, True), (False, False), (False, False)], 12,
                             lambda token: (token % 5 == 0, token % 11 == 0), 10, topk=5,
                             generator=torch.Generator().manual_seed(3))

    assert draw(torch.device("cpu")) == draw(CUDA)

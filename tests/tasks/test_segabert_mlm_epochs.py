"""segabert_mlm's examples change with the epoch: every field of an item (tokens, masks, indexes) must come from the
current epoch's example, whatever was read in the epoch before."""
import pytest
from omegaconf import OmegaConf


@pytest.mark.parametrize("mask_span", ["token", "span"])
def test_an_item_read_again_in_the_next_epoch_is_that_epochs_example(segabert_corpus, mask_span):
    from segatron_fairseq.data import DocumentExampleDataset, SegmentIndexedDataset
    from segatron_fairseq.tasks.segabert_mlm import SegaBERTMLMConfig, SegaBERTMLMTask

    task = SegaBERTMLMTask.setup_task(OmegaConf.merge(OmegaConf.structured(SegaBERTMLMConfig), {
        "data": str(segabert_corpus), "seed": 1, "tokens_per_sample": 24, "mask_span": mask_span}))
    task.load_dataset("valid")
    dataset, d = task.dataset("valid"), task.dictionary
    examples = DocumentExampleDataset(SegmentIndexedDataset(str(segabert_corpus / "valid"), len(d)), d.bos(),
                                      d.eos(), 24, task.index_limits, 1)
    first = [examples[i]["tokens"].tolist() for i in range(8)]
    examples.set_epoch(2)
    changed = [i for i in range(8) if examples[i]["tokens"].tolist() != first[i]]
    assert changed
    index = changed[0]
    dataset[index]
    dataset.set_epoch(2)
    item = dataset[index]
    source, target = item["net_input.src_tokens"], item["target"]
    original = source.where(target.eq(d.pad()), target)
    assert original.tolist() == examples[index]["tokens"].tolist()
    assert len(item["net_input.token_index"]) == len(source)

"""Other code's checkpoints as this plugin's (``importers/``, console script
``segatron-import``) and this plugin's encoders as Hugging Face directories
(``exporters/``, ``segatron-export``); ``bert_names`` holds the fairseq / BERT
names both directions use."""

"""Kimi's tokenizer object as a vLLM server holds it: Moonshot's `TikTokenTokenizer`.

Kimi K2/K2.5 ship `tokenization_kimi.py` (loaded with `trust_remote_code`), a *slow* Hugging Face
tokenizer (`transformers.PreTrainedTokenizer` subclass) over a tiktoken encoding. The model
repository is not reachable from here, so this module re-states that class's behaviour
member by member (source consulted: `tokenization_kimi.py` of moonshotai/Kimi-K2-Instruct, the
same file reference.py follows):

- the tiktoken `Encoding` is `reference.kimi_encoding()` (ranks, pattern, 256 reserved specials);
  `encode` is `reference.kimi_encode` (its long-input pre-split);
- `decoder[i]` is the GPT-2 byte-level string of `decode_single_token_bytes(i)` (`bytes_to_unicode`),
  `encoder` its inverse, `get_vocab()` returns `encoder`, `vocab_size` is `n_vocab` (163,840);
- `_convert_id_to_token` / `_convert_token_to_id` look those up; `convert_tokens_to_string` joins the
  byte-level strings, maps them back to bytes and decodes UTF-8 with `errors="replace"` (that is
  where a cut inside a multi-byte character becomes U+FFFD); `clean_up_tokenization` is the identity;
- bos `[BOS]`, eos `[EOS]`, unk `[UNK]`, pad `[PAD]`, `additional_special_tokens` and the 23
  `added_tokens_decoder` entries come from the asset `tokenizer_config.json`, handed to
  `PreTrainedTokenizer.__init__` exactly as `from_pretrained` would.

Everything else — `convert_ids_to_tokens(skip_special_tokens=...)`, `get_added_vocab()`,
`all_special_tokens`, `__len__`, `is_fast=False` — is transformers' own `PreTrainedTokenizer`
code, which is what vLLM's slow incremental detokenizer calls. The object is then wrapped with
vLLM's own `get_cached_tokenizer`, as `vllm.tokenizers.hf` does for every HF tokenizer.
"""

from __future__ import annotations

import json

from transformers import AddedToken, PreTrainedTokenizer
from transformers.convert_slow_tokenizer import bytes_to_unicode  # moved out of gpt2 in transformers 5

import reference


class TikTokenTokenizer(PreTrainedTokenizer):
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, bos_token="[BOS]", eos_token="[EOS]", unk_token=None, pad_token=None,
                 additional_special_tokens=None, added_tokens_decoder=None, **kwargs):
        self.model = reference.kimi_encoding()
        self.special_tokens = dict(self.model._special_tokens)
        self.n_words = self.model.n_vocab
        self.bos_id = self.special_tokens[str(bos_token)]
        self.eos_id = self.special_tokens[str(eos_token)]
        self.pad_id = self.special_tokens[str(pad_token)]
        self.unk_id = self.special_tokens[str(unk_token)]
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        self.decoder = {}
        for i in range(self.n_words):
            self.decoder[i] = "".join(
                self.byte_encoder[ord(ch)]
                for ch in self.model.decode_single_token_bytes(i).decode("latin-1")
            )
        self.encoder = {v: i for i, v in self.decoder.items()}
        super().__init__(bos_token=bos_token, eos_token=eos_token, unk_token=unk_token,
                         pad_token=pad_token, additional_special_tokens=additional_special_tokens,
                         added_tokens_decoder=added_tokens_decoder, **kwargs)
        self.all_special_ids_set = set(self.all_special_ids)

    def encode(self, text, allow_special_tokens=True, **kwargs):
        if len(kwargs) > 0:
            return super().encode(text, **kwargs)
        assert allow_special_tokens
        return reference.kimi_encode(text)

    def decode(self, token_ids, **kwargs):
        if len(kwargs) > 0:
            return super().decode(token_ids, **kwargs)
        if type(token_ids) is int:
            token_ids = [token_ids]
        return self.model.decode(list(token_ids))

    @property
    def vocab_size(self) -> int:
        return self.n_words

    def get_vocab(self):
        return self.encoder

    def _tokenize(self, text, **kwargs):
        return [self.decoder[t] for t in self.encode(text)]

    def _convert_token_to_id(self, token):
        return self.encoder.get(token, self.unk_id)

    def _convert_id_to_token(self, index):
        return self.decoder.get(index)

    @staticmethod
    def clean_up_tokenization(out_string: str) -> str:
        return out_string

    def convert_tokens_to_string(self, tokens):
        text = "".join(tokens)
        return bytearray([self.byte_decoder[c] for c in text]).decode("utf-8", "replace")


def load() -> TikTokenTokenizer:
    """`AutoTokenizer.from_pretrained(kimi-k2.5, trust_remote_code=True)` as far as the config goes."""
    config = json.loads((reference.KIMI_DIR / "tokenizer_config.json").read_text(encoding="utf-8"))
    added = {
        int(i): AddedToken(e["content"], lstrip=e["lstrip"], rstrip=e["rstrip"],
                           normalized=e["normalized"], single_word=e["single_word"], special=e["special"])
        for i, e in config["added_tokens_decoder"].items()
    }
    return TikTokenTokenizer(
        bos_token=config["bos_token"], eos_token=config["eos_token"], unk_token=config["unk_token"],
        pad_token=config["pad_token"], additional_special_tokens=config["additional_special_tokens"],
        added_tokens_decoder=added, clean_up_tokenization_spaces=config["clean_up_tokenization_spaces"],
        model_max_length=config["model_max_length"],
    )

"""Run vLLM 0.11.2's own chat-completion code on a known token stream (no model, no GPU).

0.11.x is the line K2-Vendor-Verifier recommends (K2-0905: >= 0.11.0, K2-Thinking: >= 0.11.1rc6).
Its code differs from 0.33's in layout (`vllm/entrypoints/openai/serving_chat.py`,
`tool_parsers/kimi_k2_tool_parser.py`, and `--reasoning-parser kimi_k2` is registered as
`DeepSeekR1ReasoningParser`) so it has its own harness; the stand-ins are the same as in
vllm_harness.py:

What runs unchanged: `OpenAIServingChat.create_chat_completion` (request checks, `_preprocess_chat`
— conversation parsing, the tool parser's `adjust_request` that sets `skip_special_tokens=False` —,
`to_sampling_params`, `chat_completion_full_generator` / `chat_completion_stream_generator` with the
reasoning and tool parsers, SSE framing, usage), the v1 engine front end's `OutputProcessor`
(incremental detokenizer, stop handling, DELTA / FINAL_ONLY outputs), the scheduler's `check_stop`,
`SamplingParams.update_from_generation_config`, `get_cached_tokenizer`.

Stood in for: the chat-template render (`apply_hf_chat_template` returns the reference-encoded
prompt ids), the input processor (`_process_inputs`: builds the `EngineCoreRequest` and applies the
generation config as `Processor.process_inputs` does), the engine (one known id per step), server
wiring (`OpenAIServingChat.__init__` bypassed; its attributes set as `vllm serve
--enable-auto-tool-choice --tool-call-parser kimi_k2 --reasoning-parser kimi_k2` sets them), and the
clock / uuid (deterministic).
"""

from __future__ import annotations

import asyncio
import json
import types

from vllm.entrypoints.openai import serving_chat as vserving
from vllm.entrypoints.openai import serving_engine
from vllm.entrypoints.openai.protocol import ChatCompletionRequest, ChatCompletionResponse, ErrorResponse
from vllm.entrypoints.openai.serving_chat import OpenAIServingChat
from vllm.transformers_utils.tokenizer import get_cached_tokenizer
from vllm.v1.core.sched.utils import check_stop
from vllm.v1.engine import EngineCoreOutput, EngineCoreRequest
from vllm.v1.engine.output_processor import OutputProcessor
from vllm.v1.request import RequestStatus

MAX_MODEL_LEN = 262_144


class _FixedClock:
    @staticmethod
    def time() -> float:
        return 1_767_225_600.0  # 2026-01-01T00:00:00Z

    def __getattr__(self, name):
        import time

        return getattr(time, name)


class _Step:
    """What 0.11's `check_stop` reads off a scheduler `Request`."""

    def __init__(self, sampling_params, prompt_len, max_tokens, eos_token_id):
        self.pooling_params = None
        self.sampling_params = sampling_params
        self.output_token_ids: list[int] = []
        self.prompt_len = prompt_len
        self.max_tokens = max_tokens
        self.eos_token_id = eos_token_id
        self.status = RequestStatus.RUNNING
        self.stop_reason = None

    @property
    def num_output_tokens(self):
        return len(self.output_token_ids)

    @property
    def num_tokens(self):
        return self.prompt_len + len(self.output_token_ids)


class FakeEngine:
    errored = False
    dead_error = None

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.completion_ids: list[int] = []

    async def get_tokenizer(self, lora_request=None):
        return self.tokenizer

    async def generate(self, engine_request, sampling_params, request_id, **kwargs):
        processor = OutputProcessor(self.tokenizer, log_stats=False)
        processor.add_request(engine_request, prompt=None, parent_req=None, request_index=0, queue=None)
        step = _Step(engine_request.sampling_params, len(engine_request.prompt_token_ids),
                     engine_request.sampling_params.max_tokens, engine_request.eos_token_id)
        for token_id in self.completion_ids:
            step.output_token_ids.append(token_id)
            stopped = check_stop(step, MAX_MODEL_LEN)
            finish = RequestStatus.get_finished_reason(step.status) if stopped else None
            out = EngineCoreOutput(request_id=request_id, new_token_ids=[token_id], finish_reason=finish,
                                   stop_reason=step.stop_reason)
            for ro in processor.process_outputs([out]).request_outputs:
                yield ro
            if stopped:
                return
        raise AssertionError("token stream ended before the server stopped (no EOS, no max_tokens)")


class Vllm011Server:
    def __init__(self, tokenizer, *, tool_parser, reasoning_parser, model_name, generation_config,
                 model_type="kimi_k2"):
        import uuid

        from vllm.entrypoints.openai.tool_parsers import ToolParserManager
        from vllm.reasoning import ReasoningParserManager

        self.tokenizer = get_cached_tokenizer(tokenizer)
        self.generation_config = generation_config
        s = OpenAIServingChat.__new__(OpenAIServingChat)
        s.model_config = types.SimpleNamespace(
            model=model_name, max_model_len=MAX_MODEL_LEN, generation_config="auto",
            hf_config=types.SimpleNamespace(model_type=model_type), logits_processors=None,
            logits_processor_pattern=None, get_diff_sampling_param=lambda: {}, runner_type="generate",
            is_multimodal_model=False, is_encoder_decoder=False, skip_tokenizer_init=False,
            allowed_local_media_path="", allowed_media_domains=None, multimodal_config=None,
            hf_text_config=types.SimpleNamespace(model_type=model_type),
        )
        s.models = types.SimpleNamespace(model_name=lambda lora=None: model_name,
                                         is_base_model=lambda name: True, lora_requests={})
        s.engine = FakeEngine(self.tokenizer)
        s.engine_client = s.engine
        s.max_model_len = MAX_MODEL_LEN
        s.request_logger = None
        s.return_tokens_as_token_ids = False
        s.log_error_stack = False
        s.response_role = "assistant"
        s.chat_template = None
        # "auto" inspects the chat template, which this stand-in does not have; the messages here
        # are plain strings and the render is stood in for, so "string" changes nothing.
        s.chat_template_content_format = "string"
        s.trust_request_chat_template = False
        s.enable_log_outputs = False
        s.logits_processors = None
        s.reasoning_parser = ReasoningParserManager.get_reasoning_parser(reasoning_parser) if reasoning_parser else None
        s.enable_auto_tools = tool_parser is not None
        s.tool_parser = ToolParserManager.get_tool_parser(tool_parser) if tool_parser else None
        s.exclude_tools_when_tool_choice_none = False
        s.enable_prompt_tokens_details = False
        s.enable_force_include_usage = False
        s.default_sampling_params = {}
        s.tool_call_id_type = "kimi_k2" if model_type == "kimi_k2" else "random"
        s.use_harmony = False
        s.supports_browsing = False
        s.browser_tool = None
        s.supports_code_interpreter = False
        s.python_tool = None
        s._process_inputs = self._process_inputs
        self.serving = s
        vserving.time = _FixedClock()
        self._uuid = uuid
        self.prompt_ids: list[int] = []
        serving_engine.apply_hf_chat_template = lambda *a, **k: list(self.prompt_ids)

    async def _process_inputs(self, request_id, engine_prompt, params, *, lora_request, trace_headers, priority):
        """`Processor.process_inputs` for a token prompt: clone the params, apply the generation
        config (its EOS ids become stop tokens), attach the tokenizer's EOS id."""
        sampling_params = params.clone()
        if sampling_params.max_tokens is None:
            sampling_params.max_tokens = MAX_MODEL_LEN - len(engine_prompt["prompt_token_ids"])
        eos = self.tokenizer.eos_token_id
        sampling_params.update_from_generation_config(self.generation_config, eos)
        request = EngineCoreRequest(
            request_id=request_id, prompt_token_ids=list(engine_prompt["prompt_token_ids"]), mm_features=None,
            sampling_params=sampling_params, pooling_params=None, eos_token_id=eos, arrival_time=0.0,
            lora_request=None, cache_salt=None, data_parallel_rank=None,
        )
        return request, {}

    def complete(self, request_json: dict, prompt_ids, completion_ids, seed: int):
        import random

        rng = random.Random(seed)
        orig = self._uuid.uuid4
        self._uuid.uuid4 = lambda: self._uuid.UUID(int=rng.getrandbits(128), version=4)
        try:
            request = ChatCompletionRequest(**json.loads(json.dumps(request_json)))
            self.prompt_ids = list(prompt_ids)
            self.serving.engine.completion_ids = list(completion_ids)
            return asyncio.run(self._run(request))
        finally:
            self._uuid.uuid4 = orig

    async def _run(self, request):
        raw = await self.serving.create_chat_completion(request, None)
        if isinstance(raw, ErrorResponse):
            raise AssertionError(f"vLLM 0.11 returned an error: {raw}")
        if isinstance(raw, ChatCompletionResponse):
            return {"kind": "response", "body": json.loads(json.dumps(raw.model_dump()))}
        frames = [frame async for frame in raw]
        assert frames[-1] == "data: [DONE]\n\n", frames[-1]
        chunks = []
        for frame in frames[:-1]:
            assert frame.startswith("data: ") and frame.endswith("\n\n"), frame
            chunk = json.loads(frame[len("data: "):])
            if "error" in chunk:
                raise AssertionError(f"vLLM 0.11 stream error: {chunk}")
            chunks.append(chunk)
        return {"kind": "chunks", "body": chunks}

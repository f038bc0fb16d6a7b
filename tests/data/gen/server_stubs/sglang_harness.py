"""Run SGLang 0.5.23's own chat-completion code on a known token stream, with no model and no GPU.

What runs unchanged (imported from the extracted wheel):
  `OpenAIServingChat.handle_request` and everything it calls for a text-only request:
  `_convert_to_internal_request`, `_process_messages` (where `skip_special_tokens` is switched off
  when tools are declared), `ChatCompletionRequest.to_sampling_params`, `GenerateReqInput`,
  `_handle_non_streaming_request` / `_build_chat_response` and `_generate_chat_stream` (SSE framing
  included), `FunctionCallParser` with the `kimi_k2` detector, `ReasoningParser` (`kimi_k2`), the
  tool-call id synthesis (`_process_tool_call_id`), `UsageProcessor`;
  the scheduler side's `Req` (`update_finish_state`: EOS / stop token / `max_new_tokens`,
  `update_reasoning_tokens`, `init_incremental_detokenize`), `SamplingParams.normalize/verify`,
  and the scheduler's `_GenerationStreamAccumulator` (what is sent to the detokenizer when:
  every token when streaming, every 50 tokens and at the end when not);
  the `DetokenizerManager.handle_batch_token_id_out` incremental detokenization (stop trimming,
  the `\ufffd` hold-back);
  the `TokenizerManager._handle_batch_output` / `_stream_one_response` hand-over to the HTTP layer.

What is stood in for:
  - process plumbing (ZMQ sockets between tokenizer manager, scheduler and detokenizer): the
    objects are passed by function call in the same order the sockets carry them;
  - the GPU forward pass: `generate_request` feeds the known completion ids one per decode step
    (the first from "prefill"), doing what the scheduler's batch-result processor does per step
    (append the token, `update_reasoning_tokens` when the request requires reasoning,
    `update_finish_state`, stream out) — 10 lines, marked below;
  - the chat template render: `_apply_jinja_template` returns the reference-encoded prompt ids
    (Kimi's template is not in a tokenizer here), like vLLM's online renderer in vllm_harness.py;
  - `TokenizerManager.__init__` and `OpenAIServingChat` server wiring (model config, template
    manager): plain attributes with the values `python -m sglang.launch_server --tool-call-parser
    kimi_k2 --reasoning-parser kimi_k2` gets; `ServerArgs` is SGLang's own, published with
    SGLang's own `runtime_context.publish`;
  - `time.time` and `uuid.uuid4` are deterministic so the fixtures regenerate byte for byte.
Guided decoding (SGLang's EBNF for kimi_k2 tool calls) is not run: the token stream is given.
"""

from __future__ import annotations

import asyncio
from array import array
import json
import types
import uuid

from sglang.srt.entrypoints.openai import serving_chat as sserving
from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest, ErrorResponse
from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
from sglang.srt.managers import tokenizer_manager as stm
from sglang.srt.managers.detokenizer_manager import DetokenizerManager, LimitedCapacityDict
from sglang.srt.managers.io_struct import GenerateReqInput
from sglang.srt.managers.schedule_batch import Req
from sglang.srt.managers.scheduler_components.output_streamer import (
    DEFAULT_FORCE_STREAM_INTERVAL,
    _GenerationStreamAccumulator,
)
from sglang.srt.managers.tokenizer_manager import ReqState, TokenizerManager
from sglang.srt.parser.reasoning_parser import ReasoningParser
from sglang.srt.runtime_context import get_serving
from sglang.srt.sampling.sampling_params import SamplingParams


class _FixedClock:
    @staticmethod
    def time() -> float:
        return 1_767_225_600.0  # 2026-01-01T00:00:00Z

    def __getattr__(self, name):
        import time

        return getattr(time, name)


class _Null:
    """Request logger / metrics exporter that logs nothing."""

    log_requests = False
    log_requests_level = 0

    def __getattr__(self, name):
        return lambda *a, **k: None

    def exporter_enabled(self):
        return False


class SglangServer:
    def __init__(self, tokenizer, *, tool_parser, reasoning_parser, model_name, eos_ids, model_type,
                 architecture="DeepseekV3ForCausalLM"):
        from sglang.srt.utils.hf_transformers.common import attach_additional_stop_token_ids

        attach_additional_stop_token_ids(tokenizer)   # what SGLang's get_tokenizer does after loading
        self.tokenizer = tokenizer
        self.eos_ids = set(eos_ids)
        tm = TokenizerManager.__new__(TokenizerManager)
        tm.tokenizer = tokenizer
        tm.served_model_name = model_name
        tm.model_path = model_name
        tm.server_args = None
        tm.model_config = types.SimpleNamespace(
            is_multimodal=False, context_len=262_144,
            hf_config=types.SimpleNamespace(model_type=model_type, architectures=[architecture]),
            get_default_sampling_params=lambda: {}, hf_eos_token_id=self.eos_ids,
        )
        tm.rid_to_state = {}
        tm.incremental_streaming_output = get_serving().incremental_streaming_output
        tm.enable_metrics = False
        tm.skip_tokenizer_init = False
        tm.request_logger = _Null()
        tm.request_metrics_exporter_manager = _Null()
        tm.disaggregation_mode = None
        tm.enable_trace = False
        tm.enable_lora = False
        tm.dump_requests_folder = None
        tm.crash_dump_folder = None
        tm.generate_request = self._generate_request
        tm.create_abort_task = lambda *a, **k: None
        self.tm = tm
        template_manager = types.SimpleNamespace(
            chat_template_name=None, jinja_template_content_format="string", reasoning_config=None,
            force_reasoning=False, completion_template_name=None, python_chat_template=None,
        )
        serving = OpenAIServingChat(tm, template_manager)
        serving._apply_jinja_template = self._render
        self.serving = serving
        # The scheduler's setup (scheduler.py, `if get_serving().reasoning_parser`): think-end ids.
        self.think_end_ids = None
        if reasoning_parser:
            rp = ReasoningParser(model_type=reasoning_parser, stream_reasoning=False, tokenizer=tokenizer)
            self.think_end_ids = rp.detector.get_think_end_token_ids(tokenizer)
        det = DetokenizerManager.__new__(DetokenizerManager)
        det.tokenizer = tokenizer
        det.vocab_size = len(tokenizer)
        self.det_proto = det
        sserving.time = _FixedClock()
        self.prompt_ids: list[int] = []
        self.completion_ids: list[int] = []

    # --- stand-in for the chat-template render ------------------------------------------
    def _render(self, request, tools, is_multimodal):
        from sglang.srt.entrypoints.openai.serving_chat import MessageProcessingResult

        return MessageProcessingResult(
            prompt="", prompt_ids=list(self.prompt_ids), image_data=None, audio_data=None,
            video_data=None, modalities=[], stop=request.stop or [],
        )

    # --- stand-in for the tokenizer-manager -> scheduler -> detokenizer round trip --------
    async def _generate_request(self, obj: GenerateReqInput, request=None):
        tm = self.tm
        obj.normalize_batch_and_arguments()
        rid = obj.rid if isinstance(obj.rid, str) else uuid.uuid4().hex
        obj.rid = rid
        state = ReqState([], False, asyncio.Event(), obj, stm.APIServerReqTimeStats(disagg_mode=None))
        tm.rid_to_state[rid] = state
        sp = SamplingParams(**obj.sampling_params)
        sp.normalize(self.tokenizer)
        sp.verify(len(self.tokenizer))
        req = Req(rid, "", array("q", self.prompt_ids), sp, stream=bool(obj.stream),
                  require_reasoning=bool(obj.require_reasoning), eos_token_ids=self.eos_ids,
                  vocab_size=len(self.tokenizer))
        req.tokenizer = self.tokenizer
        det = DetokenizerManager.__new__(DetokenizerManager)
        det.__dict__.update(self.det_proto.__dict__)
        det.decode_status = LimitedCapacityDict(capacity=64)
        det.disable_tokenizer_batch_decode = get_serving().disable_tokenizer_batch_decode
        # DetokenizerManager.__init__ sets this from the server's tool parser.
        det.is_tool_call_parser_gpt_oss = get_serving().tool_call_parser == "gpt-oss"
        from sglang.srt.parser.response_template import tool_close_token_ids

        det.tool_close_token_ids = tool_close_token_ids(get_serving().tool_call_parser, self.tokenizer)
        waiter = tm._stream_one_response(obj=obj, state=state, request=None)
        for token in self.completion_ids:
            # --- what the batch-result processor does with one sampled token ---
            req.output_ids.extend([token])
            if req.require_reasoning and self.think_end_ids:
                req.update_reasoning_tokens([token], self.think_end_ids)
            req.update_finish_state(1)
            acc = _GenerationStreamAccumulator(
                return_logprob=False, return_hidden_states=False, return_routed_experts=False,
                return_indexer_topk=False, return_sampling_mask=False,
                spec_algorithm=types.SimpleNamespace(is_none=lambda: True),
                disaggregation_mode=None, default_stream_interval=get_serving().stream_interval,
                default_force_stream_interval=DEFAULT_FORCE_STREAM_INTERVAL,
                get_cached_tokens_details=lambda r: None,
                is_request_level_customized_info_key=lambda k: False,
                rust_server_mode=False, current_weight_version=get_serving().weight_version,
            )
            acc.accept(req=req)
            payload = acc.to_payload(dp_rank=0, is_idle_batch=False)
            # --- end of the scheduler stand-in ---
            if payload is not None:
                out = det.handle_batch_token_id_out(payload)
                await tm._handle_batch_output(out)
                while state.event.is_set():
                    try:
                        yield await waiter.__anext__()
                    except StopAsyncIteration:
                        return
            if req.finished():
                return
        raise AssertionError("token stream ended before the server stopped (no EOS, no max_tokens)")

    def complete(self, request_json: dict, prompt_ids, completion_ids, seed: int):
        import random

        rng = random.Random(seed)
        orig = uuid.uuid4
        uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)
        try:
            self.prompt_ids = list(prompt_ids)
            self.completion_ids = list(completion_ids)
            request = ChatCompletionRequest(**json.loads(json.dumps(request_json)))
            return asyncio.run(self._run(request))
        finally:
            uuid.uuid4 = orig

    async def _run(self, request):
        raw = await self.serving.handle_request(request, None)
        if isinstance(raw, ErrorResponse):
            raise AssertionError(f"SGLang returned an error: {raw}")
        if hasattr(raw, "body_iterator"):
            frames = []
            async for frame in raw.body_iterator:
                frames.append(frame if isinstance(frame, str) else frame.decode())
            text = "".join(frames)
            events = [e for e in text.split("\n\n") if e.strip()]
            assert events[-1] == "data: [DONE]", events[-1]
            chunks = []
            for e in events[:-1]:
                assert e.startswith("data: "), e
                chunk = json.loads(e[len("data: "):])
                if "error" in chunk:
                    raise AssertionError(f"SGLang stream error: {chunk}")
                chunks.append(chunk)
            return {"kind": "chunks", "body": chunks}
        if hasattr(raw, "body"):
            body = json.loads(raw.body)
        elif hasattr(raw, "model_dump"):
            body = json.loads(raw.model_dump_json())
        else:
            body = raw
        if isinstance(body, dict) and body.get("object") == "error":
            raise AssertionError(f"SGLang returned an error: {body}")
        return {"kind": "response", "body": body}

"""The policy being trained: it renders the visible context to tokens, generates, parses the output.

:class:`TokenPolicy` is a c1 :class:`~c1.agent.policy.Policy` like ``llm`` or ``builtin``, so RL
rollouts run through the real loop (tools, budget, pruning). Unlike ``llm`` it keeps the exact
token ids of every turn (prompt and completion) — what the CISPO update trains on. Generation is
pluggable:

- :class:`HFGenerator` — in process, a transformers model (with its LoRA adapter), for small
  models and tests;
- :class:`VLLMGenerator` — a vLLM server's ``/v1/completions`` with the prompt given as token
  ids (so the server cannot render it differently) and the sampled ids returned; the adapter is
  hot-reloaded after every update through ``/v1/load_lora_adapter`` (the server must run with
  ``--enable-lora`` and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``).

Both return the sampler's own log-probability of every token it sampled, under the distribution
it sampled from (temperature applied): the behaviour policy μ that the CISPO update corrects for
(:mod:`c1.train.rl`). vLLM gives the processed distribution's log-probabilities only when it runs
with ``--logprobs-mode processed_logprobs`` (its default reports the raw logits' ones).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from c1.agent import prompts
from c1.agent.policy import AgentState, PolicyError, Reply
from c1.agent.tools import PARAMS


@dataclass
class Sample:
    ids: list[int]
    logprobs: list[float] | None = None
    """The sampler's log-probability of each sampled token (None when it did not say)."""


class Generator(Protocol):
    def generate(self, prompt_ids: list[int], max_new_tokens: int, temperature: float,
                 stop_ids: list[int]) -> Sample | list[int]: ...


@dataclass
class Turn:
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float] | None = None
    """The sampler's log-probabilities of ``completion_ids`` (μ), when it gave them."""


@dataclass
class TokenPolicy:
    renderer: object
    generator: Generator
    tool_names: dict = field(default_factory=dict)
    max_new_tokens: int = 1024
    temperature: float = 1.0
    max_context: int | None = None
    """Prompt + completion limit in tokens (the model's window); a longer prompt ends the run."""
    max_docs: int | None = None
    soft: float = 0.5
    name: str = "trained"
    model: str | None = None
    turns: list[Turn] = field(default_factory=list)

    def system_prompt(self, budget: int) -> str:
        # word for word the llm policy's prompt: what the trained model will be served with
        return prompts.system_prompt(budget, self.tool_names, self.soft, self.max_docs)

    def next(self, state: AgentState) -> Reply:
        ids = self.renderer.prompt_ids(state.context.openai_messages(), state.tools)
        room = self.max_new_tokens
        if self.max_context is not None:
            room = min(room, self.max_context - len(ids))
            if room <= 0:
                raise PolicyError(f"the prompt ({len(ids)} tokens) fills the model's window ({self.max_context})")
        if state.max_reply_tokens is not None:
            room = min(room, state.max_reply_tokens)
        got = self.generator.generate(ids, room, self.temperature, self.renderer.stop_ids)
        sample = got if isinstance(got, Sample) else Sample(list(got))
        out = list(sample.ids)
        logprobs = list(sample.logprobs) if sample.logprobs is not None and len(sample.logprobs) == len(out) else None
        turn = Turn(ids, out, logprobs)
        if self.turns and self.turns[-1].prompt_ids == ids:  # the loop asked again after a cut reply: it is void
            self.turns[-1] = turn
        else:
            self.turns.append(turn)
        known = {state.tool_names[k]: p for k, p in PARAMS.items() if k in state.tool_names}
        reply = self.renderer.parse(out, known)
        reply.prompt_tokens = len(ids)
        reply.completion_tokens = len(out)
        reply.truncated = not out or out[-1] not in self.renderer.stop_ids  # cut at ``room``: no stop token
        return reply


class HFGenerator:
    """Sampling with a transformers model (PEFT-wrapped or not), one sequence at a time."""

    def __init__(self, model, pad_id: int | None = None, seed: int | None = None, top_p: float = 1.0):
        self.model = model
        self.pad_id = pad_id
        self.top_p = top_p
        self._gen = None
        if seed is not None:
            import torch

            torch.manual_seed(seed)

    def generate(self, prompt_ids: list[int], max_new_tokens: int, temperature: float, stop_ids: list[int]) -> Sample:
        import torch

        device = next(self.model.parameters()).device
        ids = torch.tensor([prompt_ids], device=device)
        kwargs = dict(max_new_tokens=max_new_tokens, eos_token_id=list(stop_ids) or None,
                      pad_token_id=self.pad_id if self.pad_id is not None else (stop_ids[0] if stop_ids else 0),
                      output_scores=True, return_dict_in_generate=True)
        if temperature and temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature, top_p=self.top_p, top_k=0)
        else:
            kwargs.update(do_sample=False)
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            out = self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **kwargs)
        if was_training:
            self.model.train()
        new = out.sequences[0, len(prompt_ids):]
        # scores: the processed logits each token was sampled from (temperature, top-p applied)
        picked = [torch.log_softmax(s[0].float(), dim=-1)[t] for s, t in zip(out.scores, new.tolist())]
        logprobs = torch.stack(picked).tolist() if picked else []  # one device sync, not one per token
        return Sample(new.tolist(), logprobs)


class VLLMGenerator:
    """Completions from a vLLM server, prompt as token ids, sampled token ids back."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 600.0):
        from c1.agent.policies.llm import ChatClient

        self.client = ChatClient(base_url, api_key, timeout=timeout)
        self.model = model
        self.base_model = model

    def generate(self, prompt_ids: list[int], max_new_tokens: int, temperature: float, stop_ids: list[int]) -> list[int]:
        body = {"model": self.model, "prompt": list(prompt_ids), "max_tokens": max_new_tokens,
                "temperature": temperature, "stop_token_ids": list(stop_ids), "skip_special_tokens": False,
                "include_stop_str_in_output": True, "return_token_ids": True,
                "logprobs": 0, "return_tokens_as_token_ids": True}
        resp = self.client._request("POST", "/completions", body)
        data = resp.json()
        return Sample(completion_token_ids(data), completion_logprobs(data))

    def load_adapter(self, name: str, path: str) -> None:
        """Make the server serve ``path`` as ``name``; later generations use it."""
        self.client._request("POST", "/load_lora_adapter", {"lora_name": name, "lora_path": str(path)})
        previous, self.model = self.model, name
        if previous != self.base_model:
            try:
                self.client._request("POST", "/unload_lora_adapter", {"lora_name": previous}, retries=0)
            except PolicyError:
                pass


def completion_logprobs(data: dict) -> list[float] | None:
    """The sampled tokens' log-probabilities of a vLLM completion (``logprobs: 0``), if given."""
    choice = (data.get("choices") or [{}])[0]
    values = (choice.get("logprobs") or {}).get("token_logprobs")
    if not isinstance(values, list) or any(v is None for v in values):
        return None
    return [float(v) for v in values]


def completion_token_ids(data: dict) -> list[int]:
    """The sampled ids of a vLLM completion: ``choices[0].token_ids`` (``return_token_ids``), else
    the ``token_id:N`` strings of the logprobs (``return_tokens_as_token_ids``)."""
    choice = (data.get("choices") or [{}])[0]
    if isinstance(choice.get("token_ids"), list):
        return [int(t) for t in choice["token_ids"]]
    tokens = ((choice.get("logprobs") or {}).get("tokens")) or []
    out = []
    for t in tokens:
        if isinstance(t, str) and t.startswith("token_id:"):
            out.append(int(t.split(":", 1)[1]))
        else:
            raise PolicyError("the server returned no token ids (vLLM ≥ 0.10 with return_token_ids is needed)")
    return out

"""Arithmetic a small model cannot do in its head but can with code, and the traces
that warm-start it, in the exact token ids a rollout would produce.

Problems are multi-digit products ("What is 4821 * 3967?"), modular powers ("What is
7^45 mod 1000?") and binomial coefficients ("How many ways are there to choose 7 of 23
items?"); the demo uses the first two kinds. A tool trace writes the code, receives the output as observation
ids (built by the format, exactly as the rollout loop would append them; loss mask 0)
and boxes it; a direct trace boxes the answer at once. Train and held-out problems
never share a question. This module makes data; it does not train or call the server.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import AbstractSet, Sequence

from trainer.formats import ToolFormat
from trainer.rewards import Task
from trainer.tokenizer import Tokenizer


@dataclass(frozen=True)
class Problem:
    question: str
    code: str      # the program that answers it
    answer: str

    def task(self) -> Task:
        return Task(self.question, self.answer)


def product(rng: random.Random) -> Problem:
    a, b = rng.randint(100, 9999), rng.randint(100, 9999)
    return Problem(f"What is {a} * {b}?", f"print({a} * {b})", str(a * b))


def modular_power(rng: random.Random) -> Problem:
    base, exponent, modulus = rng.randint(2, 99), rng.randint(10, 99), rng.choice((97, 101, 1000, 1009, 9973))
    return Problem(f"What is {base}^{exponent} mod {modulus}?", f"print(pow({base}, {exponent}, {modulus}))",
                   str(pow(base, exponent, modulus)))


def binomial(rng: random.Random) -> Problem:
    n = rng.randint(20, 99)
    k = rng.randint(3, min(n // 2, 12))
    return Problem(f"How many ways are there to choose {k} of {n} items?",
                   f"import math\nprint(math.comb({n}, {k}))", str(math.comb(n, k)))


KINDS = {"product": product, "modular_power": modular_power, "binomial": binomial}
DEMO_KINDS = ("product", "modular_power")


def problems(count: int, seed: int, exclude: AbstractSet[str] = frozenset(),
             kinds: Sequence[str] = DEMO_KINDS) -> list[Problem]:
    """`count` distinct problems, the kinds taken in turn, none of whose questions is in `exclude`."""
    unknown = sorted(set(kinds) - KINDS.keys())
    if not kinds or unknown:
        raise ValueError(f"problem kinds: {unknown or 'none given'}; known: {sorted(KINDS)}")
    rng = random.Random(seed)
    made: dict[str, Problem] = {}
    for _ in range(100 * count):
        if len(made) == count:
            break
        problem = KINDS[kinds[len(made) % len(kinds)]](rng)
        if problem.question not in exclude:
            made.setdefault(problem.question, problem)
    else:
        raise ValueError(f"only {len(made)} distinct problems of kinds {list(kinds)} found, {count} asked")
    return list(made.values())


def train_and_heldout(n_train: int, n_heldout: int, seed: int, kinds: Sequence[str] = DEMO_KINDS
                      ) -> tuple[list[Problem], list[Problem]]:
    heldout = problems(n_heldout, seed + 1, kinds=kinds)
    train = problems(n_train, seed, exclude={p.question for p in heldout}, kinds=kinds)
    return train, heldout


@dataclass(frozen=True)
class Trace:
    """A supervised example: completion ids after the prompt, and their loss mask."""

    prompt: list[int]
    tokens: list[int]
    mask: list[int]


def tool_trace(problem: Problem, fmt: ToolFormat, tokenizer: Tokenizer, observation_budget: int) -> Trace:
    call = tokenizer.encode(fmt.call_text(problem.code))
    observation = fmt.observation_ids(problem.answer, tokenizer, observation_budget)
    final = tokenizer.encode(f"\\boxed{{{problem.answer}}}") + [tokenizer.eos_id]
    return Trace(tokenizer.prompt_ids(fmt.prompt(problem.question)), call + observation + final,
                 [1] * len(call) + [0] * len(observation) + [1] * len(final))


def direct_trace(problem: Problem, fmt: ToolFormat, tokenizer: Tokenizer) -> Trace:
    final = tokenizer.encode(f"\\boxed{{{problem.answer}}}") + [tokenizer.eos_id]
    return Trace(tokenizer.prompt_ids(fmt.prompt(problem.question)), final, [1] * len(final))


def warm_start_traces(train: list[Problem], fmt: ToolFormat, tokenizer: Tokenizer, *, tool_share: float,
                      observation_budget: int, seed: int) -> list[Trace]:
    """One trace per problem: a tool trace with probability `tool_share`, else direct."""
    rng = random.Random(seed)
    return [tool_trace(p, fmt, tokenizer, observation_budget) if rng.random() < tool_share
            else direct_trace(p, fmt, tokenizer) for p in train]

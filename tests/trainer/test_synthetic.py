from __future__ import annotations

from trainer.formats import get_format
from trainer.synthetic import direct_trace, problems, tool_trace, train_and_heldout, warm_start_traces
from trainer.tokenizer import ByteTokenizer

TOK = ByteTokenizer()


def test_problems_are_right_distinct_and_held_out_apart():
    train, heldout = train_and_heldout(300, 50, seed=3)
    assert len(train) == 300 and len(heldout) == 50
    assert not {p.question for p in train} & {p.question for p in heldout}
    for p in train + heldout:
        assert eval(p.code.removeprefix("print(").removesuffix(")")) == int(p.answer)
    assert problems(10, seed=1) == problems(10, seed=1)
    assert sum("mod" in p.question for p in problems(10, seed=1)) == 5


def test_tool_trace_is_what_the_rollout_loop_would_append():
    fmt = get_format("torl", instructions=False)
    problem = problems(1, seed=0)[0]
    trace = tool_trace(problem, fmt, TOK, observation_budget=32)
    assert trace.prompt == TOK.encode(fmt.prompt(problem.question))
    text = TOK.decode(trace.tokens)
    assert fmt.parse_call(text[:text.index("```", 10) + 3]).code.strip() == problem.code
    observation = fmt.observation_ids(problem.answer, TOK, 32)
    start = len(TOK.encode(fmt.call_text(problem.code)))
    assert trace.tokens[start:start + len(observation)] == observation
    assert trace.mask[start:start + len(observation)] == [0] * len(observation)
    assert sum(trace.mask) == len(trace.tokens) - len(observation)
    assert trace.tokens[-1] == TOK.eos_id and text.endswith(f"\\boxed{{{problem.answer}}}")


def test_direct_trace_and_the_mix():
    fmt = get_format("rstar2")
    problem = problems(1, seed=0)[0]
    direct = direct_trace(problem, fmt, TOK)
    assert TOK.decode(direct.tokens) == f"\\boxed{{{problem.answer}}}" and all(direct.mask)
    traces = warm_start_traces(problems(400, seed=2), fmt, TOK, tool_share=0.25, observation_budget=32, seed=0)
    with_tool = sum("<tool_call>" in TOK.decode(t.tokens) for t in traces)
    assert 60 <= with_tool <= 140

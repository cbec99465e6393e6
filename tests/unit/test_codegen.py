from toolserver.codegen import stale_files


def test_generated_stubs_match_the_proto():
    assert stale_files() == [], "run: python -m toolserver.codegen"

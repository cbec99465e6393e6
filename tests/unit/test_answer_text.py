"""What a model reads of a python answer's displays, and the images a client hands on."""

from __future__ import annotations

from toolcontract.answer_text import answer_text
from toolcontract.displays import displayed_images
from toolcontract.v1 import toolserver_pb2 as pb


def answer() -> pb.ExecuteResponse:
    return pb.ExecuteResponse(outcome=pb.OK, stdout="drawn\n", python=pb.PythonResult(value="42", displays=[
        pb.Display(kind="display_data", data={"image/png": b"\x89PNG" * 10, "text/plain": b"<Figure>"}),
        pb.Display(kind="display_data", data={"text/markdown": b"**bold**", "text/plain": b"<Markdown>"}),
        pb.Display(kind="display_data", data={"image/svg+xml": b"<svg/>", "text/plain": b"<SVG>"}),
        pb.Display(kind="execute_result", data={"text/plain": b"42"}),
    ]))


def test_a_reader_of_text_is_told_of_each_display_once():
    assert answer_text(answer()).splitlines() == [
        "stdout:", "drawn", "", "value: 42", "display: image/png, 40 bytes", "display: **bold**", "display: <SVG>"]


def test_the_raster_images_are_handed_on_in_order():
    assert displayed_images(answer()) == [("image/png", b"\x89PNG" * 10)]
    assert displayed_images(pb.ExecuteResponse(outcome=pb.OK, bash=pb.BashResult())) == []

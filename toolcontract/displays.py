"""What a session's cell displayed, for a client that hands it on: the images among its
displays (a figure, an `IPython.display.Image`), in order, for a vision model or a file."""

from __future__ import annotations

from toolcontract.v1 import toolserver_pb2 as pb

# The raster image types a display carries as bytes, in the order a reader prefers them.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp")


def image_type(display: pb.Display) -> str | None:
    """The first of IMAGE_TYPES the display holds, or None."""
    return next((mime for mime in IMAGE_TYPES if mime in display.data), None)


def displayed_images(response: pb.ExecuteResponse) -> list[tuple[str, bytes]]:
    """(MIME type, bytes) of each display of the answer that holds a raster image, in the
    order the cell displayed them (one image a display: the first type of IMAGE_TYPES it
    has)."""
    if response.WhichOneof("result") != "python":
        return []
    images = []
    for display in response.python.displays:
        mime = image_type(display)
        if mime is not None:
            images.append((mime, display.data[mime]))
    return images

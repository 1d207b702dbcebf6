"""Images of text — scans, photos of pages, screenshots — read by OCR (the ``ocr`` extra). A
multi-page TIFF is one document whose frames are its pages."""

from __future__ import annotations

import warnings

from c1.index.documents import Document, Skip
from c1.index.loaders import ocr
from c1.index.loaders.common import join_pages
from c1.index.loaders.registry import Format, Loaded, register
from c1.index.loaders.titles import document_title, lines_of

MAX_PIXELS = 200_000_000
"""Pixels in one image (a 14,000 × 14,000 scan); larger ones are refused before decoding."""


def load_image(path: str) -> Loaded:
    from PIL import Image, ImageSequence, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = MAX_PIXELS
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                frames = getattr(image, "n_frames", 1)
                texts = [ocr.image_text(frame, path=path, page=n, pages=frames)
                         for n, frame in enumerate(ImageSequence.Iterator(image), 1)]
    except (UnidentifiedImageError, SyntaxError):
        raise Skip("not an image this reader knows (damaged or misnamed?)") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise Skip(f"image too large (over {MAX_PIXELS:,} pixels)") from None
    except OSError as exc:
        raise Skip(f"damaged image ({exc})") from None
    if not any(t.strip() for t in texts):  # a photo: nothing to index, and nothing to retry
        return [], ["no text found in the image (OCR)"]
    text, pages = join_pages(texts)
    if len(texts) == 1:
        pages = None
    title = document_title("", lines_of(text)[:1], [], path)
    return [Document(key=path, path=path, title=title, text=text, pages=pages, meta={"ocr_pages": len(texts)})], []


register(Format("image", (".png", ".jpg", ".jpeg", ".tif", ".tiff"), load_image,
                extra=ocr.EXTRA, modules=("rapidocr", "PIL"), walk_without_extra=False))

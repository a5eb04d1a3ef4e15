"""Scanned documents for tests: text drawn into an image (Pillow, reportlab's bundled Vera font), saved as an
image-only PDF, a PNG or a multi-page TIFF. No text layer anywhere: only OCR can read them."""
from __future__ import annotations

from pathlib import Path

DPI = 200


def _font(size: int):
    from PIL import ImageFont
    import reportlab

    return ImageFont.truetype(str(Path(reportlab.__file__).parent / "fonts" / "Vera.ttf"), size)


def page_image(lines: list[str], dpi: int = DPI, size_pt: float = 12.0):
    """A Letter page (8.5 x 11 in) with ``lines`` drawn top-down from one inch, 2 x the font size apart; a line
    starting with "# " is drawn 1.8 x larger (a heading); tab-separated cells start 2.2 inches apart (a table)."""
    from PIL import Image, ImageDraw

    img = Image.new("L", (int(8.5 * dpi), int(11 * dpi)), 255)
    draw = ImageDraw.Draw(img)
    px = dpi / 72
    y = dpi
    for line in lines:
        big = line.startswith("# ")
        size = size_pt * (1.8 if big else 1.0)
        for i, cell in enumerate((line[2:] if big else line).split("\t")):
            draw.text((dpi + i * 2.2 * dpi, y), cell, fill=0, font=_font(int(size * px)))
        y += int(2 * size * px)
    return img


def write_scanned_pdf(path: Path, pages: list[list[str]], dpi: int = DPI) -> Path:
    images = [page_image(lines, dpi) for lines in pages]
    images[0].save(path, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return path


def write_scanned_png(path: Path, lines: list[str], dpi: int = DPI) -> Path:
    page_image(lines, dpi).save(path, "PNG", dpi=(dpi, dpi))
    return path


def write_scanned_tiff(path: Path, pages: list[list[str]], dpi: int = DPI) -> Path:
    images = [page_image(lines, dpi) for lines in pages]
    images[0].save(path, "TIFF", dpi=(dpi, dpi), save_all=True, append_images=images[1:], compression="tiff_lzw")
    return path

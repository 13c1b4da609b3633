from __future__ import annotations

from geometry.shapes import Shape


def total_area(shapes: list[Shape]) -> float:
    return sum(shape.area() for shape in shapes)


def largest(shapes: list[Shape]) -> Shape:
    return max(shapes, key=lambda shape: shape.area())

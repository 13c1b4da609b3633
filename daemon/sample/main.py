from __future__ import annotations

from geometry.shapes import Circle, Shape, Square
from geometry.total import largest, total_area


def report(shapes: list[Shape]) -> str:
    return f"{len(shapes)} shapes, total area {total_area(shapes):.2f}"


def main() -> None:
    shapes: list[Shape] = [Circle(1.0), Square(2.0)]
    print(report(shapes))
    print(type(largest(shapes)).__name__)


if __name__ == "__main__":
    main()

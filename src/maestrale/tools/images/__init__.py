"""The image_generation built-in tool: an OpenAI-compatible images upstream, its answer checked
to be a real image, stored as a Files API file of the caller's workspace."""

from maestrale.tools.images.tool import IMAGE_GENERATION, ImageGeneration

__all__ = ["IMAGE_GENERATION", "ImageGeneration"]

"""The `image_generation` tool: an image from the configured OpenAI-compatible images upstream,
checked to be a real image within the limits, stored as a Files API file of the caller's
workspace and returned as a `tool_file` chunk.

The upstream is called with no session open; the file is stored afterwards, by
`save_generated_file` in a short session of its own.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from maestrale.conversations.server_tools import ServerTool, ToolOutcome
from maestrale.core.errors import AppError
from maestrale.tools.base import ToolContext
from maestrale.tools.images.check import NotAnImage, check_image
from maestrale.tools.images.upstream import generate, missing_setting
from maestrale.tools.web.upstream import UpstreamError

if TYPE_CHECKING:
    from maestrale.config import Settings

IMAGE_GENERATION = "image_generation"
MAX_PROMPT_CHARS = 4000
# The most pixels an accepted image may have (a 8192 x 8192 image); Pillow's own bomb guard
# stops decompression bombs before this is checked.
MAX_PIXELS = 8192 * 8192


class ImageGeneration:
    """The `image_generation` built-in tool. `sizes` (the `image_generation_sizes` setting)
    become the `size` argument's choices in the offered function; a call checks its size against
    the setting in any case."""

    type = IMAGE_GENERATION

    def __init__(self, sizes: Sequence[str] = ()) -> None:
        self.sizes = list(sizes)

    def unavailable(self, settings: Settings) -> str | None:
        return missing_setting(settings)

    def offer(self, entry: dict[str, Any]) -> ServerTool:
        size: dict[str, Any] = {
            "type": "string",
            "description": "The image's size, WIDTHxHEIGHT in pixels (default: the first one).",
        }
        if self.sizes:
            size["enum"] = self.sizes
        return ServerTool(
            name=IMAGE_GENERATION,
            description=(
                "Generate an image from a text description. The image is attached to the answer "
                "as a file."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "prompt": {
                        "type": "string",
                        "description": "A detailed description of the image to generate.",
                        "maxLength": MAX_PROMPT_CHARS,
                    },
                    "size": size,
                },
                "required": ["prompt"],
            },
            source={"tool": IMAGE_GENERATION},
        )

    async def run(self, context: ToolContext, arguments: dict[str, Any]) -> ToolOutcome:
        settings = context.services.settings
        prompt = arguments.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            return failed("`prompt` must be a non-empty string")
        if len(prompt) > MAX_PROMPT_CHARS:
            return failed(f"`prompt` is longer than {MAX_PROMPT_CHARS} characters")
        allowed = settings.image_generation_sizes
        size = arguments.get("size") or allowed[0]
        if size not in allowed:
            return failed(f"`size` must be one of {', '.join(allowed)}")
        reason = missing_setting(settings)
        if reason is not None:
            return failed(reason)
        info: dict[str, Any] = {"model": settings.image_generation_model, "size": size}
        try:
            generated = await generate(settings, prompt.strip(), str(size))
            image = await asyncio.to_thread(check_image, generated.data, MAX_PIXELS)
        except UpstreamError as exc:
            return failed(str(exc), info)
        except NotAnImage as exc:
            return failed(
                f"the images upstream answered something that is not an image: {exc}", info
            )
        from maestrale.files.generated import save_generated_file

        try:
            file_id, file_name = await save_generated_file(
                context.services.db,
                context.services.blobs,
                context.services.settings,
                context.tenant,
                filename=f"image_{uuid.uuid4().hex[:12]}.{image.extension}",
                data=generated.data,
                mimetype=image.mimetype,
            )
        except AppError as exc:  # a storage limit, say
            return failed(f"the image could not be stored: {exc.message}", info)
        info.update(
            file_id=file_id,
            file_name=file_name,
            mimetype=image.mimetype,
            bytes=len(generated.data),
            width=image.width,
            height=image.height,
        )
        if generated.revised_prompt:
            info["revised_prompt"] = generated.revised_prompt
        shape = f"{image.width}x{image.height} " if image.width and image.height else ""
        text = (
            f"Generated a {shape}{image.format} image and saved it as file {file_name!r} "
            f"(id {file_id}); it is attached to the answer."
        )
        if generated.revised_prompt:
            text += f" The images model revised the prompt to: {generated.revised_prompt}"
        chunk = {
            "type": "tool_file",
            "tool": IMAGE_GENERATION,
            "file_id": file_id,
            "file_name": file_name,
            "file_type": image.extension,
        }
        return ToolOutcome(text, info=info, files=[chunk])


def failed(message: str, info: dict[str, Any] | None = None) -> ToolOutcome:
    """A call that failed, as the model reads it."""
    return ToolOutcome(f"error: {message}", error=message, info=info or {})

# Copied unchanged from sgl-project/SpecForge @a6b6b023, specforge/utils.py lines 195-282 (safe_conversations_generator, the
# loader scripts/prepare_hidden_states.py feeds conversation JSONL through), MIT License, Copyright (c) 2025 sgl-project.
# The module's other imports (torch, torch.distributed, transformers) are not needed by this function.
import json
import logging

logger = logging.getLogger(__name__)


def safe_conversations_generator(file_path):
    """
    Generator that:
    1. Extracts the 'conversations' field.
    2. Preserves all original fields within each message.
    3. [Key step] Converts all list/dict-type field values to strings to resolve mixed-type conflicts (e.g., for Arrow compatibility).
    """
    with open(file_path, "r", encoding="utf-8") as f:
        for i, line in enumerate(f):
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
                raw_convs = row.get("conversations", [])

                # 1. Ensure 'conversations' is a list
                if not isinstance(raw_convs, list):
                    # If it's None or some unexpected type, treat as empty or skip
                    if raw_convs is None:
                        raw_convs = []
                    else:
                        # Edge case: 'conversations' is a plain string or non-iterable—skip this line
                        logger.warning(
                            f"Line {i + 1}: 'conversations' is not a list. Please check!"
                        )
                        continue

                cleaned_convs = []
                for msg in raw_convs:
                    # 2. Ensure each item in the list is a dictionary
                    if not isinstance(msg, dict):
                        # Skip if an element is not a dict (e.g., malformed like ["user", "hi"])
                        continue

                    # 3. [Core logic] Iterate over all fields in the message (role, content, tools, etc.)
                    new_msg = {}
                    for k, v in msg.items():
                        # If the value is a list or dict, serialize it to a JSON string
                        # This ensures Arrow treats the column as string type instead of list/struct
                        if isinstance(v, (list, dict)):
                            new_msg[k] = json.dumps(v, ensure_ascii=False)
                        else:
                            # Keep primitive types (str, int, float, bool, None) unchanged
                            new_msg[k] = v

                    cleaned_convs.append(new_msg)

                # Build result with conversations
                result = {"conversations": cleaned_convs}

                # Preserve 'tools' field if present
                if "tools" in row:
                    tools = row["tools"]
                    if tools is not None:
                        # If tools is a JSON string, parse it first
                        if isinstance(tools, str):
                            try:
                                tools = json.loads(tools)
                            except json.JSONDecodeError:
                                logger.warning(
                                    f"Line {i + 1}: 'tools' is a string but not valid JSON, keeping as-is"
                                )
                                result["tools"] = tools
                                yield result
                                continue

                        # Serialize tools to JSON string for Arrow compatibility
                        # (same treatment as list/dict fields in conversations)
                        if isinstance(tools, (list, dict)):
                            result["tools"] = json.dumps(tools, ensure_ascii=False)
                        else:
                            # Primitive type, keep as-is
                            result["tools"] = tools
                    else:
                        result["tools"] = []

                yield result

            except Exception as e:
                logger.warning(f"Skipping line {i + 1}: {e}")
                continue

"""The pipeline's stages. Each is `async def run(ctx, llm, options) -> ctx` and does
nothing for work already in the context (resume)."""

"""The client capabilities lspilot announces: only what it really handles."""

from __future__ import annotations

from lsprotocol import types as lsp


def client_capabilities() -> lsp.ClientCapabilities:
    symbol_kinds = list(lsp.SymbolKind)
    return lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(
            apply_edit=False,
            workspace_folders=True,
            configuration=True,
            did_change_configuration=lsp.DidChangeConfigurationClientCapabilities(dynamic_registration=False),
            did_change_watched_files=lsp.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=True, relative_pattern_support=True
            ),
            symbol=lsp.WorkspaceSymbolClientCapabilities(
                symbol_kind=lsp.ClientSymbolKindOptions(value_set=symbol_kinds)
            ),
            # Diagnostics are pulled fresh for every question, so a refresh needs no work.
            diagnostics=lsp.DiagnosticWorkspaceClientCapabilities(refresh_support=True),
        ),
        text_document=lsp.TextDocumentClientCapabilities(
            synchronization=lsp.TextDocumentSyncClientCapabilities(did_save=True),
            definition=lsp.DefinitionClientCapabilities(link_support=True),
            declaration=lsp.DeclarationClientCapabilities(link_support=True),
            type_definition=lsp.TypeDefinitionClientCapabilities(link_support=True),
            implementation=lsp.ImplementationClientCapabilities(link_support=True),
            references=lsp.ReferenceClientCapabilities(),
            hover=lsp.HoverClientCapabilities(
                content_format=[lsp.MarkupKind.Markdown, lsp.MarkupKind.PlainText]
            ),
            document_symbol=lsp.DocumentSymbolClientCapabilities(
                hierarchical_document_symbol_support=True,
                symbol_kind=lsp.ClientSymbolKindOptions(value_set=symbol_kinds),
            ),
            call_hierarchy=lsp.CallHierarchyClientCapabilities(),
            publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(
                version_support=True, related_information=True
            ),
            diagnostic=lsp.DiagnosticClientCapabilities(dynamic_registration=True),
        ),
        window=lsp.WindowClientCapabilities(work_done_progress=True),
        general=lsp.GeneralClientCapabilities(position_encodings=[lsp.PositionEncodingKind.Utf16]),
    )

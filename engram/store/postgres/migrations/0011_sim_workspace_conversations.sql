-- 0009: Sim's current generation scopes conversations by workspaceId (docs/compat.md "Sim"): the messages
-- of one (workspaceId, key), in order, without a scan, as 0004 does for workflowId.
CREATE INDEX memories_by_workspace_conversation ON memories (
    space_id, ((attrs)::jsonb ->> 'workspaceId'), ((attrs)::jsonb ->> 'conversationKey')
);

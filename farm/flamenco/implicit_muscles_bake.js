// SPDX-License-Identifier: GPL-3.0-or-later
//
// Flamenco 3 job type: bake Implicit Muscles on the farm in chunks, merge, then render from the bake.
//
// Install: copy this file into the `scripts/` folder next to the Flamenco Manager executable and restart the
// Manager; the job type "Implicit Muscles Bake + Render" appears in Blender's Flamenco add-on. The workers' Blender
// (4.2 or newer) needs the Implicit Muscles extension installed and enabled, because the bake runs it:
//   blender -b -y -c implicit_muscles_bake <file.blend> --frames 51-100 --part
// Each chunk re-simulates the muscles from the start frame, so the chunks run in parallel on any workers and the
// merged bake equals a bake made in one go. The merge task joins the parts, sets up the Mesh Cache modifier and
// saves the job's copy of the .blend; the render tasks then render that copy from the cache (frames 1-100 of the
// bake are rendered in chunks of `render_chunk_size`). See docs/farm.md.

const JOB_TYPE = {
    label: "Implicit Muscles Bake + Render",
    description: "Bake Implicit Skinning and muscles in parallel chunks, merge the point caches, render",
    settings: [
        { key: "frames", type: "string", required: true,
          eval: "f'{C.scene.frame_start}-{C.scene.frame_end}'",
          description: "Frames to bake and render, one range like '1-250' (the muscles simulate from the start frame)" },
        { key: "bake_chunk_size", type: "int32", default: 50, propargs: {min: 1}, visible: "submission",
          description: "Frames per bake task; each task also simulates the muscles from the start frame to its first frame" },
        { key: "render_chunk_size", type: "int32", default: 1, propargs: {min: 1}, visible: "submission",
          description: "Frames per render task" },
        { key: "render", type: "bool", default: true, visible: "submission",
          description: "Render the frames from the bake after merging it" },

        // render_output_root + add_path_components determine the value of render_output_path, as in Flamenco's own
        // render job types.
        { key: "render_output_root", type: "string", subtype: "dir_path", required: true, visible: "submission",
          description: "Base directory of the render output; job-specific parts are appended to it" },
        { key: "add_path_components", type: "int32", required: true, default: 0, propargs: {min: 0, max: 32},
          visible: "submission",
          description: "Number of path components of the current blend file to use in the render output path" },
        { key: "render_output_path", type: "string", subtype: "file_path", editable: false,
          eval: "str(Path(abspath(settings.render_output_root), last_n_dir_parts(settings.add_path_components), jobname, '{timestamp}', '######'))",
          description: "Final file path of the render output" },

        { key: "blendfile", type: "string", required: true, visible: "web",
          description: "Path of the .blend file to bake and render" },
        { key: "format", type: "string", required: true, eval: "C.scene.render.image_settings.file_format",
          visible: "web" },
    ]
};

const BAKE_COMMAND = ["-c", "implicit_muscles_bake"];

function compileJob(job) {
    const settings = job.settings;
    const range = bakeRange(settings.frames);
    const bakeTasks = [];
    for (const chunk of frameChunker(`${range.first}-${range.last}`, settings.bake_chunk_size)) {
        const task = author.Task(`bake-${chunk}`, "blender");
        task.addCommand(author.Command("blender-render", {
            exe: "{blender}",
            exeArgs: "{blenderArgs}",
            argsBefore: BAKE_COMMAND,
            blendfile: settings.blendfile,
            args: ["--frames", chunkRange(chunk), "--part"],
        }));
        job.addTask(task);
        bakeTasks.push(task);
    }

    const merge = author.Task("merge-bake", "blender");
    merge.addCommand(author.Command("blender-render", {
        exe: "{blender}",
        exeArgs: "{blenderArgs}",
        argsBefore: BAKE_COMMAND,
        blendfile: settings.blendfile,
        args: ["--frames", `${range.first}-${range.last}`, "--merge"],
    }));
    for (const task of bakeTasks) {
        merge.addDependency(task);
    }
    job.addTask(merge);

    if (!settings.render) {
        return;
    }
    const renderOutput = renderOutputPath(job);
    settings.render_output_path = renderOutput;
    for (const chunk of frameChunker(`${range.first}-${range.last}`, settings.render_chunk_size)) {
        const task = author.Task(`render-${chunk}`, "blender");
        task.addCommand(author.Command("blender-render", {
            exe: "{blender}",
            exeArgs: "{blenderArgs}",
            argsBefore: [],
            blendfile: settings.blendfile,
            args: [
                "--render-output", path.join(path.dirname(renderOutput), path.basename(renderOutput)),
                "--render-format", settings.format,
                "--render-frame", chunkRange(chunk).replace("-", ".."),
            ],
        }));
        task.addDependency(merge);
        job.addTask(task);
    }
}

// One range "first-last" or one frame: a bake simulates from the start frame, so it takes no lists of ranges.
function bakeRange(frames) {
    const text = String(frames).trim();
    const m = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(text);
    if (!m) {
        throw `Implicit Muscles bakes one frame range like "1-250", not "${frames}"`;
    }
    const first = parseInt(m[1]);
    const last = m[2] === undefined ? first : parseInt(m[2]);
    if (last < first) {
        throw `The bake's last frame (${last}) comes before its first (${first})`;
    }
    return { first: first, last: last };
}

// frameChunker gives "51-100", or "7" for a one-frame chunk.
function chunkRange(chunk) {
    return chunk.indexOf("-") < 0 ? `${chunk}-${chunk}` : chunk;
}

function renderOutputPath(job) {
    const p = job.settings.render_output_path;
    if (!p) {
        throw "no render_output_path setting!";
    }
    return p.replace(/{([^}]+)}/g, (match, group0) => {
        switch (group0) {
        case "timestamp":
            return formatTimestampLocal(job.created);
        default:
            return match;
        }
    });
}

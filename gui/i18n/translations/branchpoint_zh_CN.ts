<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
    <context>
        <name>About</name>
        <message>
            <source>not loaded yet (the first run loads it)</source>
            <translation>尚未加载（首次运行时加载）</translation>
        </message>
        <message>
            <source>none</source>
            <translation>无</translation>
        </message>
        <message>
            <source>Model</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>Model licence</source>
            <translation>模型许可</translation>
        </message>
        <message>
            <source>Execution provider in use</source>
            <translation>实际使用的执行提供程序</translation>
        </message>
        <message>
            <source>Device setting</source>
            <translation>设备设置</translation>
        </message>
        <message>
            <source>Cache folder (models, logs)</source>
            <translation>缓存文件夹（模型、日志）</translation>
        </message>
        <message>
            <source>Settings file</source>
            <translation>设置文件</translation>
        </message>
        <message>
            <source>not recorded (see the model's own page)</source>
            <translation>未记录（见模型自己的页面）</translation>
        </message>
        <message>
            <source>accepted when prepared</source>
            <translation>准备时已接受</translation>
        </message>
    </context>
    <context>
        <name>AboutDialog</name>
        <message>
            <source>About Branchpoint</source>
            <translation>关于 Branchpoint</translation>
        </message>
        <message>
            <source>See how a language model chooses its words: one small causal LM continues a prompt under several decoding strategies side by side.</source>
            <translation>看看语言模型如何选词：一个小型因果语言模型用几种解码策略并排续写同一个提示词。</translation>
        </message>
    </context>
    <context>
        <name>BranchStrategyBox</name>
        <message>
            <source>parent's strategy</source>
            <translation>父车道的策略</translation>
        </message>
        <message>
            <source>The strategy a branched lane continues with after the picked token (right-click a token, or double-click an alternative in the inspector)</source>
            <translation>分支车道在所选词元之后采用的策略（右键单击词元，或在检查器中双击候选词元）</translation>
        </message>
    </context>
    <context>
        <name>GenerationConfigs</name>
        <message>
            <source>Refused: {error}</source>
            <translation>已拒绝：{error}</translation>
        </message>
        <message>
            <source>Added “{name}” from {path}: it decodes as transformers does with this file.</source>
            <translation>已从 {path} 添加“{name}”：它的解码方式与 transformers 使用该文件时相同。</translation>
        </message>
        <message>
            <source>Could not export “{name}”: {error}</source>
            <translation>无法导出“{name}”：{error}</translation>
        </message>
        <message>
            <source> (not part of a generation config: {keys})</source>
            <translation>（生成配置不包含：{keys}）</translation>
        </message>
        <message>
            <source>Exported “{name}” to {path}{note}.</source>
            <translation>已将“{name}”导出到 {path}{note}。</translation>
        </message>
        <message>
            <source>Add a lane from a generation config</source>
            <translation>从生成配置添加车道</translation>
        </message>
        <message>
            <source>Select the lane to export first.</source>
            <translation>请先选择要导出的车道。</translation>
        </message>
        <message>
            <source>Export the lane as a generation config</source>
            <translation>将车道导出为生成配置</translation>
        </message>
        <message>
            <source>From generation_config.json…</source>
            <translation>从 generation_config.json 添加…</translation>
        </message>
        <message>
            <source>A lane that decodes as transformers does with a model's generation_config.json</source>
            <translation>一条按模型的 generation_config.json、与 transformers 相同方式解码的车道</translation>
        </message>
        <message>
            <source>Rename</source>
            <translation>重命名</translation>
        </message>
        <message>
            <source>Duplicate</source>
            <translation>复制</translation>
        </message>
        <message>
            <source>Remove</source>
            <translation>移除</translation>
        </message>
        <message>
            <source>Export as generation_config.json…</source>
            <translation>导出为 generation_config.json…</translation>
        </message>
        <message>
            <source>Add from generation_config.json…</source>
            <translation>从 generation_config.json 添加…</translation>
        </message>
    </context>
    <context>
        <name>Menus</name>
        <message>
            <source>Follow the system</source>
            <translation>跟随系统</translation>
        </message>
        <message>
            <source>Light</source>
            <translation>浅色</translation>
        </message>
        <message>
            <source>Dark</source>
            <translation>深色</translation>
        </message>
        <message>
            <source>Automatic (CUDA when it really runs, else CPU)</source>
            <translation>自动（CUDA 真正可用时用 CUDA，否则用 CPU）</translation>
        </message>
        <message>
            <source>&amp;Device</source>
            <translation>设备(&amp;D)</translation>
        </message>
        <message>
            <source>&amp;Theme</source>
            <translation>主题(&amp;T)</translation>
        </message>
        <message>
            <source>&amp;Language</source>
            <translation>语言(&amp;L)</translation>
        </message>
        <message>
            <source>The language changes the next time Branchpoint starts.</source>
            <translation>界面语言将在下次启动 Branchpoint 时生效。</translation>
        </message>
    </context>
    <context>
        <name>RecentMenu</name>
        <message>
            <source>Open &amp;Recent</source>
            <translation>最近打开(&amp;R)</translation>
        </message>
        <message>
            <source>No recent runs</source>
            <translation>没有最近的运行</translation>
        </message>
        <message>
            <source>Clear list</source>
            <translation>清空列表</translation>
        </message>
    </context>
    <context>
        <name>RunCommands</name>
        <message>
            <source>start a new run</source>
            <translation>开始新的运行</translation>
        </message>
        <message>
            <source>Select a token of a lane first (click it in the text): “Why” explains that step.</source>
            <translation>请先选择车道中的一个词元（在文本中点击它）：“为什么”解释那一步。</translation>
        </message>
        <message>
            <source>Select a token of the lane to explain (click it in the text).</source>
            <translation>请选择要解释的车道中的一个词元（在文本中单击它）。</translation>
        </message>
        <message>
            <source>Select a token of the lane to compare with another model (click it in the text).</source>
            <translation>请先选中要与另一个模型比较的车道中的一个词元（在文本中点击它）。</translation>
        </message>
        <message>
            <source>No other prepared model to compare with: prepare a precision variant first (python main.py prepare --variant int4).</source>
            <translation>没有可供比较的其他已准备模型：请先准备一个精度变体（python main.py prepare --variant int4）。</translation>
        </message>
    </context>
    <context>
        <name>RunFiles</name>
        <message>
            <source>Nothing to save yet: run or open a run first.</source>
            <translation>还没有可保存的内容：请先运行或打开一次运行。</translation>
        </message>
        <message>
            <source>Save run</source>
            <translation>保存运行</translation>
        </message>
        <message>
            <source>Branchpoint run (*.json)</source>
            <translation>Branchpoint 运行 (*.json)</translation>
        </message>
        <message>
            <source>Open run</source>
            <translation>打开运行</translation>
        </message>
        <message>
            <source>Branchpoint run (*.json);;All files (*)</source>
            <translation>Branchpoint 运行 (*.json);;所有文件 (*)</translation>
        </message>
        <message>
            <source>open another run</source>
            <translation>打开另一次运行</translation>
        </message>
        <message>
            <source>Export images into folder</source>
            <translation>将图像导出到文件夹</translation>
        </message>
        <message>
            <source>exported {len} images to {folder}</source>
            <translation>已将 {len} 张图像导出到 {folder}</translation>
        </message>
    </context>
    <context>
        <name>Settings</name>
        <message>
            <source>The settings file {path} could not be read; Branchpoint starts with its defaults (the file is kept as {name}).</source>
            <translation>无法读取设置文件 {path}；Branchpoint 以默认设置启动（原文件已保留为 {name}）。</translation>
        </message>
        <message>
            <source>Some settings could not be read and are back to their defaults: {keys}.</source>
            <translation>部分设置无法读取，已恢复默认：{keys}。</translation>
        </message>
    </context>
    <context>
        <name>Shortcuts</name>
        <message>
            <source>Left / Right</source>
            <translation>左 / 右</translation>
        </message>
        <message>
            <source>Previous / next step (in a lane's text or the timeline)</source>
            <translation>上一步 / 下一步（在车道文本或时间线中）</translation>
        </message>
        <message>
            <source>Home / End</source>
            <translation>Home / End</translation>
        </message>
        <message>
            <source>First / last step (timeline)</source>
            <translation>第一步 / 最后一步（时间线）</translation>
        </message>
        <message>
            <source>Right-click a token or mark</source>
            <translation>右键单击词元或标记</translation>
        </message>
        <message>
            <source>Branch from an alternative, force it for all lanes</source>
            <translation>从候选词元分支，或对全部车道强制该词元</translation>
        </message>
        <message>
            <source>Double-click an inspector row</source>
            <translation>双击检查器中的一行</translation>
        </message>
        <message>
            <source>Branch a new lane with that token</source>
            <translation>以该词元分出一条新车道</translation>
        </message>
    </context>
    <context>
        <name>ShortcutsDialog</name>
        <message>
            <source>Keyboard shortcuts</source>
            <translation>键盘快捷键</translation>
        </message>
        <message>
            <source>Keys</source>
            <translation>按键</translation>
        </message>
        <message>
            <source>Does</source>
            <translation>作用</translation>
        </message>
    </context>
    <context>
        <name>TourRunner</name>
        <message>
            <source>Stop the run before starting a tour stop.</source>
            <translation>请先停止运行，再开始导览中的一站。</translation>
        </message>
        <message>
            <source>open a tour stop</source>
            <translation>打开导览站点</translation>
        </message>
        <message>
            <source>This stop compares the model with its {variant} variant, {name}, which is not prepared here: prepare it first (Model → Add precision variant…, or python main.py prepare --variant {variant}).</source>
            <translation>这一站把模型与它的 {variant} 变体 {name} 比较，但这里还没有准备它：请先准备（模型 → 添加精度变体…，或 python main.py prepare --variant {variant}）。</translation>
        </message>
        <message>
            <source>on {model}, which writes Chinese; {previous} writes English only</source>
            <translation>在 {model} 上运行，它会写中文；{previous} 只写英文</translation>
        </message>
        <message>
            <source>{model} writes English only: this stop reads best on {other} ({size}, prepared once: Model → Add model…, or python main.py prepare --catalog {other} --accept-license)</source>
            <translation>{model} 只写英文：这一站在 {other} 上效果最好（{size}，只需准备一次：模型 → 添加模型…，或 python main.py prepare --catalog {other} --accept-license）</translation>
        </message>
        <message>
            <source>This run never chose “{token}”: select a step and press Y to ask why it chose its token.</source>
            <translation>这次运行从未选择“{token}”：选择一步并按 Y，询问它为什么选择了它的词元。</translation>
        </message>
    </context>
    <context>
        <name>Unsaved</name>
        <message>
            <source>Save changes?</source>
            <translation>保存更改？</translation>
        </message>
        <message>
            <source>The shown run has not been saved. Save it before you {action}?</source>
            <translation>当前显示的运行尚未保存。要在{action}之前保存吗？</translation>
        </message>
        <message>
            <source>Otherwise its text and statistics are gone.</source>
            <translation>否则它的文本和统计数据将会丢失。</translation>
        </message>
        <message>
            <source>Don't save</source>
            <translation>不保存</translation>
        </message>
        <message>
            <source>Don't ask again before a new run</source>
            <translation>新运行前不再询问</translation>
        </message>
    </context>
    <context>
        <name>actions</name>
        <message>
            <source>Open…</source>
            <translation>打开…</translation>
        </message>
        <message>
            <source>Open a saved run (JSON); no model needed</source>
            <translation>打开已保存的运行（JSON）；不需要模型</translation>
        </message>
        <message>
            <source>Save…</source>
            <translation>保存…</translation>
        </message>
        <message>
            <source>Save the run as JSON</source>
            <translation>将运行保存为 JSON</translation>
        </message>
        <message>
            <source>Export images…</source>
            <translation>导出图像…</translation>
        </message>
        <message>
            <source>Export the prompt and texts, each chart (PNG and SVG) and a report image of the whole run</source>
            <translation>导出提示词和文本、每张图表（PNG 和 SVG）以及整次运行的报告图</translation>
        </message>
        <message>
            <source>Ask to save before a new run</source>
            <translation>新运行前询问是否保存</translation>
        </message>
        <message>
            <source>Before a new run replaces a run that has not been saved, ask whether to save it</source>
            <translation>新的运行将替换尚未保存的运行时，先询问是否保存</translation>
        </message>
        <message>
            <source>&amp;Quit</source>
            <translation>退出(&amp;Q)</translation>
        </message>
        <message>
            <source>&amp;Run all lanes</source>
            <translation>运行全部车道(&amp;R)</translation>
        </message>
        <message>
            <source>&amp;Stop</source>
            <translation>停止(&amp;S)</translation>
        </message>
        <message>
            <source>Replay</source>
            <translation>重放</translation>
        </message>
        <message>
            <source>Re-run the shown run with the model and check every token</source>
            <translation>用模型重新运行当前显示的运行，并逐个核对词元</translation>
        </message>
        <message>
            <source>Run again and &amp;compare</source>
            <translation>再次运行并比较(&amp;C)</translation>
        </message>
        <message>
            <source>Run every lane again (fresh draws where the seed is auto) and say where each differs from this run</source>
            <translation>再次运行每条车道（种子为自动时重新抽样），并指出每条车道与本次运行的不同之处</translation>
        </message>
        <message>
            <source>Critical-point &amp;thresholds…</source>
            <translation>临界点阈值(&amp;T)…</translation>
        </message>
        <message>
            <source>What makes a step a critical point (▲)</source>
            <translation>什么样的步骤算作临界点（▲）</translation>
        </message>
        <message>
            <source>Add precision &amp;variant…</source>
            <translation>添加精度变体(&amp;V)…</translation>
        </message>
        <message>
            <source>Make a precision variant of the chosen model offline (fp16, int8, int4, the GGUF's own blocks, llama.cpp's schemes, ggml), checked against fp32 (also in the model picker)</source>
            <translation>离线为所选模型制作精度变体（fp16、int8、int4、GGUF 自带的块、llama.cpp 的方案、ggml），并与 fp32 对照检查（模型选择器中也有）</translation>
        </message>
        <message>
            <source>&amp;Add lane (greedy)</source>
            <translation>添加车道（贪心）(&amp;A)</translation>
        </message>
        <message>
            <source>&amp;Duplicate selected lane</source>
            <translation>复制所选车道(&amp;D)</translation>
        </message>
        <message>
            <source>Re&amp;move selected lane</source>
            <translation>移除所选车道(&amp;M)</translation>
        </message>
        <message>
            <source>Move selected lane &amp;left</source>
            <translation>所选车道左移(&amp;L)</translation>
        </message>
        <message>
            <source>Move selected lane r&amp;ight</source>
            <translation>所选车道右移(&amp;I)</translation>
        </message>
        <message>
            <source>Add lane from &amp;generation_config.json…</source>
            <translation>从 generation_config.json 添加车道(&amp;G)…</translation>
        </message>
        <message>
            <source>&amp;Export selected lane as generation_config.json…</source>
            <translation>将所选车道导出为 generation_config.json(&amp;E)…</translation>
        </message>
        <message>
            <source>Undo branch</source>
            <translation>撤销分支</translation>
        </message>
        <message>
            <source>Remove the last branch lane (Ctrl+Z)</source>
            <translation>移除最近的分支车道（Ctrl+Z）</translation>
        </message>
        <message>
            <source>Step mode</source>
            <translation>单步模式</translation>
        </message>
        <message>
            <source>One token at a time: Run (or F7) advances every lane one step, F8 the selected lane, F9 runs it to the end; double-click a candidate to take it instead</source>
            <translation>一次一个词元：运行（或 F7）让每条车道前进一步，F8 只推进选中的车道，F9 让它运行到结束；双击某个候选词元可改选它</translation>
        </message>
        <message>
            <source>One step of every lane</source>
            <translation>每条车道前进一步</translation>
        </message>
        <message>
            <source>One step of the selected lane</source>
            <translation>选中的车道前进一步</translation>
        </message>
        <message>
            <source>Run the selected lane to the end</source>
            <translation>让选中的车道运行到结束</translation>
        </message>
        <message>
            <source>Explain lane</source>
            <translation>解释车道</translation>
        </message>
        <message>
            <source>Inside the model for the selected lane: every layer's attention per head and the logit lens (Attention and Logit lens tabs)</source>
            <translation>查看所选车道在模型内部的情况：每层每个头的注意力和 logit 透镜（“注意力”和“Logit 透镜”标签页）</translation>
        </message>
        <message>
            <source>Why this token?</source>
            <translation>为什么是这个词元？</translation>
        </message>
        <message>
            <source>For the selected step: each earlier token hidden from every later one in turn, and how much that moves its token against the runner-up; where in depth the difference is made (Why tab)</source>
            <translation>对所选的一步：依次把每个更早的词元对其后所有词元隐藏，看这使它的词元相对第二名移动多少；以及这个差在模型的哪一层形成（“为什么”标签页）</translation>
        </message>
        <message>
            <source>Compare with model…</source>
            <translation>与模型比较…</translation>
        </message>
        <message>
            <source>Read the selected lane's tokens with a second prepared model (a precision variant, say): per-step KL, top-1 flips, change in p(chosen) (Model comparison tab)</source>
            <translation>用第二个已准备的模型（例如一个精度变体）读取所选车道的词元：逐步的 KL、首选翻转、所选词元概率 p 的变化（“模型比较”标签页）</translation>
        </message>
        <message>
            <source>&amp;Previous lane</source>
            <translation>上一条车道(&amp;P)</translation>
        </message>
        <message>
            <source>&amp;Next lane</source>
            <translation>下一条车道(&amp;N)</translation>
        </message>
        <message>
            <source>&amp;Full screen</source>
            <translation>全屏(&amp;F)</translation>
        </message>
        <message>
            <source>&amp;Reset layout</source>
            <translation>重置布局(&amp;R)</translation>
        </message>
        <message>
            <source>Window size, panel sizes and tool bar as at first start</source>
            <translation>窗口大小、各面板大小和工具栏恢复到首次启动时的样子</translation>
        </message>
        <message>
            <source>&amp;Keyboard shortcuts</source>
            <translation>键盘快捷键(&amp;K)</translation>
        </message>
        <message>
            <source>Tour</source>
            <translation>导览</translation>
        </message>
        <message>
            <source>A guided tour: one preset per phenomenon, explained in English and Chinese</source>
            <translation>引导式导览：每种现象一个预设，附中英文讲解</translation>
        </message>
        <message>
            <source>&amp;About Branchpoint</source>
            <translation>关于 Branchpoint(&amp;A)</translation>
        </message>
        <message>
            <source>&amp;File</source>
            <translation>文件(&amp;F)</translation>
        </message>
        <message>
            <source>&amp;Run</source>
            <translation>运行(&amp;R)</translation>
        </message>
        <message>
            <source>&amp;Lanes</source>
            <translation>车道(&amp;L)</translation>
        </message>
        <message>
            <source>&amp;View</source>
            <translation>视图(&amp;V)</translation>
        </message>
        <message>
            <source>&amp;Help</source>
            <translation>帮助(&amp;H)</translation>
        </message>
    </context>
    <context>
        <name>add_model</name>
        <message>
            <source>Licence of {model}</source>
            <translation>{model} 的许可</translation>
        </message>
        <message>
            <source>{model} is made available under the {licence}. Read the terms; preparing it means accepting them.</source>
            <translation>{model} 依据 {licence} 提供。请阅读这些条款；准备该模型即表示接受它们。</translation>
        </message>
        <message>
            <source>&lt;p&gt;The full text is at &lt;a href="{url}"&gt;{url}&lt;/a&gt;; a copy is kept in the model's folder once it is prepared.&lt;/p&gt;</source>
            <translation>&lt;p&gt;全文见 &lt;a href="{url}"&gt;{url}&lt;/a&gt;；模型准备好后，其文件夹中会保留一份副本。&lt;/p&gt;</translation>
        </message>
        <message>
            <source>Accept</source>
            <translation>接受</translation>
        </message>
        <message>
            <source>Preparing {model}: {size} downloaded once from {source}, checked, converted and exported to ONNX into your cache folder (a few minutes).</source>
            <translation>正在准备 {model}：从 {source} 下载一次（{size}），校验、转换并导出为 ONNX，存入你的缓存文件夹（需要几分钟）。</translation>
        </message>
        <message>
            <source>Add model</source>
            <translation>添加模型</translation>
        </message>
        <message>
            <source>GGUF model file</source>
            <translation>GGUF 模型文件</translation>
        </message>
        <message>
            <source>Preparing {file}: dequantized to float32, its tokenizer built from its own vocabulary, exported to ONNX and checked (a minute or more, by its size).</source>
            <translation>正在准备 {file}：反量化为 float32，用其自身词表构建分词器，导出为 ONNX 并校验（视大小需要一分钟或更久）。</translation>
        </message>
        <message>
            <source>Add GGUF model</source>
            <translation>添加 GGUF 模型</translation>
        </message>
    </context>
    <context>
        <name>allowed</name>
        <message>
            <source>unset unless do_sample=true (it applies to sample: lanes only)</source>
            <translation>除非 do_sample=true，否则不设置（只用于采样车道）</translation>
        </message>
        <message>
            <source>none on a beam lane (beams stop on eos and length)</source>
            <translation>束搜索车道上不设置（束搜索在遇到 eos 或达到长度时停止）</translation>
        </message>
        <message>
            <source>false when num_beams &gt; 1 (beam sampling is not supported)</source>
            <translation>num_beams &gt; 1 时须为 false（不支持束采样）</translation>
        </message>
        <message>
            <source>a non-empty string</source>
            <translation>非空字符串</translation>
        </message>
        <message>
            <source>a list of token ids (integers &gt;= 0)</source>
            <translation>词元 id 的列表（&gt;= 0 的整数）</translation>
        </message>
        <message>
            <source>a list of non-empty lists of token ids</source>
            <translation>由词元 id 组成的非空列表的列表</translation>
        </message>
        <message>
            <source>a list of [non-empty list of token ids, finite float] pairs</source>
            <translation>[词元 id 的非空列表, 有限浮点数] 对的列表</translation>
        </message>
        <message>
            <source>its default ({default}) unless {stage} is set: it configures that processor</source>
            <translation>除非设置了 {stage}，否则须为默认值（{default}）：它配置的是那个处理器</translation>
        </message>
        <message>
            <source>unset with mirostat={mirostat} (mirostat chooses its own truncation, as llama.cpp's mirostat replaces its other samplers)</source>
            <translation>mirostat={mirostat} 时不设置（mirostat 自行决定截断，正如 llama.cpp 的 mirostat 取代其他采样器）</translation>
        </message>
        <message>
            <source>false with mirostat={mirostat} (both decide each step's truncation)</source>
            <translation>mirostat={mirostat} 时须为 false（两者都决定每一步的截断）</translation>
        </message>
        <message>
            <source>unset unless repetition_penalty, frequency_penalty or presence_penalty is set (it is their window)</source>
            <translation>除非设置了 repetition_penalty、frequency_penalty 或 presence_penalty，否则不设置（它是它们的窗口）</translation>
        </message>
        <message>
            <source>an order naming every active processor (missing {missing})</source>
            <translation>列出每个生效处理器的顺序（缺少 {missing}）</translation>
        </message>
        <message>
            <source>mirostat last (it draws the token, as in llama.cpp)</source>
            <translation>mirostat 放在最后（它抽取词元，与 llama.cpp 相同）</translation>
        </message>
        <message>
            <source>{presets}, or distinct names among {names}</source>
            <translation>{presets}，或 {names} 中互不重复的名称</translation>
        </message>
        <message>
            <source>an integer &gt;= {low}</source>
            <translation>≥ {low} 的整数</translation>
        </message>
        <message>
            <source>an integer in [{low}, {high}]</source>
            <translation>[{low}, {high}] 范围内的整数</translation>
        </message>
        <message>
            <source>a finite float</source>
            <translation>有限的浮点数</translation>
        </message>
        <message>
            <source>a float in {left}{low}, {high}{right}</source>
            <translation>{left}{low}, {high}{right} 范围内的浮点数</translation>
        </message>
        <message>
            <source>true or false</source>
            <translation>true 或 false</translation>
        </message>
        <message>
            <source>{first} or {last}</source>
            <translation>{first} 或 {last}</translation>
        </message>
        <message>
            <source>a list of non-empty strings</source>
            <translation>非空字符串的列表</translation>
        </message>
        <message>
            <source>invalid {name}={value}: allowed {allowed}</source>
            <translation>无效的 {name}={value}：允许值为 {allowed}</translation>
        </message>
    </context>
    <context>
        <name>app</name>
        <message>
            <source>Branchpoint</source>
            <translation>Branchpoint</translation>
        </message>
        <message>
            <source>No model is prepared: pick “Add local folder…” in the Model list, or restart to prepare the default model. Saved runs can still be opened (Ctrl+O).</source>
            <translation>还没有准备好的模型：在“模型”列表中选择“添加本地文件夹…”，或重新启动以准备默认模型。已保存的运行仍可打开（Ctrl+O）。</translation>
        </message>
    </context>
    <context>
        <name>attention_view</name>
        <message>
            <source>where it looks</source>
            <translation>它关注哪里</translation>
        </message>
        <message>
            <source>who looks at it</source>
            <translation>谁关注它</translation>
        </message>
        <message>
            <source>leave out position 0 (the start token)</source>
            <translation>不看位置 0（起始词元）</translation>
        </message>
        <message>
            <source>leave out position 0</source>
            <translation>去掉位置 0</translation>
        </message>
        <message>
            <source>Where the token looks (its attention over every earlier token), or who looks at it (every later token's attention to it)</source>
            <translation>该词元关注哪里（它对之前每个词元的注意力），或谁关注它（之后每个词元对它的注意力）</translation>
        </message>
        <message>
            <source>The token the heatmap is about (prompt tokens too); selecting a step in the text picks its token</source>
            <translation>热力图所针对的词元（也包括提示词中的词元）；在文本中选中某一步即选中其词元</translation>
        </message>
        <message>
            <source>Average the heads, show each layer's strongest head, or one head</source>
            <translation>对各注意力头取平均、显示每层最强的头，或只看某一个头</translation>
        </message>
        <message>
            <source>Position 0 takes most of many heads' attention (an attention sink): blank it and rescale the rest of each row to sum to 1</source>
            <translation>位置 0 吸走了许多注意力头的大部分注意力（注意力汇聚点）：将其留空，并把每行其余部分重新归一化为和为 1</translation>
        </message>
        <message>
            <source>token</source>
            <translation>词元</translation>
        </message>
        <message>
            <source>layer</source>
            <translation>层</translation>
        </message>
        <message>
            <source>head</source>
            <translation>头</translation>
        </message>
        <message>
            <source>mean of the heads</source>
            <translation>各头平均</translation>
        </message>
        <message>
            <source>strongest head</source>
            <translation>最强的头</translation>
        </message>
        <message>
            <source>head {head}</source>
            <translation>第 {head} 个头</translation>
        </message>
        <message>
            <source>{lane} is not explained yet: explaining runs its tokens through the model's inspection model once (prepared the first time).</source>
            <translation>{lane} 尚未解释：解释会用模型的检查模型把它的词元跑一遍（首次使用时会先准备检查模型）。</translation>
        </message>
        <message>
            <source>Run the lanes, then explain one: its attention of every layer and head over the tokens before each token.</source>
            <translation>先运行各车道，再解释其中一条：查看每层每个头在每个词元处对之前词元的注意力。</translation>
        </message>
        <message>
            <source>where {token} looks</source>
            <translation>{token} 关注哪里</translation>
        </message>
        <message>
            <source>who looks at {token}</source>
            <translation>谁关注 {token}</translation>
        </message>
        <message>
            <source>lane {name}</source>
            <translation>车道 {name}</translation>
        </message>
        <message>
            <source>each layer's strongest head</source>
            <translation>每层最强的头</translation>
        </message>
        <message>
            <source>colour: attention weight</source>
            <translation>颜色：注意力权重</translation>
        </message>
        <message>
            <source>dashed: end of the prompt</source>
            <translation>虚线：提示词结尾</translation>
        </message>
        <message>
            <source>click a cell: that layer's heads</source>
            <translation>单击单元格：查看该层的各个头</translation>
        </message>
        <message>
            <source>colour: weight with &lt;b&gt;position 0 left out&lt;/b&gt; (rows rescaled to sum to 1; blank where it took over {limit})</source>
            <translation>颜色：&lt;b&gt;去掉位置 0&lt;/b&gt; 后的权重（每行重新归一化为和为 1；位置 0 占比超过 {limit} 处留空）</translation>
        </message>
        <message>
            <source>colour: the strongest head's own weight, &lt;b&gt;position 0 left out&lt;/b&gt; (not rescaled)</source>
            <translation>颜色：最强头自身的权重，&lt;b&gt;去掉位置 0&lt;/b&gt;（未重新归一化）</translation>
        </message>
        <message>
            <source>layers marked ● see every earlier position, the others only the last {window}</source>
            <translation>标 ● 的层看得到前面所有位置，其余各层只看最近 {window} 个</translation>
        </message>
        <message>
            <source>&lt;b&gt;‹start›&lt;/b&gt;: the model's start token {token}, put in front of the plain prompt (as a chat has it) to take the attention sink, not its first word</source>
            <translation>&lt;b&gt;‹起始›&lt;/b&gt;：模型的起始词元 {token}，像对话那样放在纯文本提示之前，由它而不是提示的第一个词承接注意力汇聚</translation>
        </message>
        <message>
            <source>heads, L{layer}</source>
            <translation>L{layer} 各头</translation>
        </message>
        <message>
            <source>layer {layer}, {heads}: the heatmap's row</source>
            <translation>第 {layer} 层，{heads}：热力图中的这一行</translation>
        </message>
        <message>
            <source>{token} {weight} (strongest: layer {layer} head {head} {head_weight})</source>
            <translation>{token} {weight}（最强：第 {layer} 层第 {head} 个头 {head_weight}）</translation>
        </message>
        <message>
            <source>top tokens attended</source>
            <translation>最受关注的词元</translation>
        </message>
        <message>
            <source>attending to it most</source>
            <translation>最关注它的词元</translation>
        </message>
        <message>
            <source>&lt;b&gt;{what}&lt;/b&gt; (colours' mean over layers): {entries}</source>
            <translation>&lt;b&gt;{what}&lt;/b&gt;（颜色为各层平均）：{entries}</translation>
        </message>
        <message>
            <source>layer {layer} head {head} {weight}</source>
            <translation>第 {layer} 层第 {head} 个头 {weight}</translation>
        </message>
        <message>
            <source>blank</source>
            <translation>留空</translation>
        </message>
        <message>
            <source>&lt;b&gt;{query} → {key}&lt;/b&gt;: layer {layer} shows {shown}; strongest heads {strongest} (the first gives each other earlier token but position 0 {others} on average)</source>
            <translation>&lt;b&gt;{query} → {key}&lt;/b&gt;：第 {layer} 层显示 {shown}；最强的头 {strongest}（第一个头给位置 0 以外每个更早词元的平均权重为 {others}）</translation>
        </message>
    </context>
    <context>
        <name>autosaver</name>
        <message>
            <source>Autosave failed ({message}). The run is still here: save it with Save…</source>
            <translation>自动保存失败（{message}）。运行仍在这里：请用“保存…”保存它</translation>
        </message>
    </context>
    <context>
        <name>beam_step</name>
        <message>
            <source>{kept} kept: a beam from now on · {finished} finished · the others pruned</source>
            <translation>{kept} 保留：此后为一束 · {finished} 已完成 · 其余被剪枝</translation>
        </message>
        <message>
            <source>Every beam at this step</source>
            <translation>此步的每一束</translation>
        </message>
        <message>
            <source>beam {beam} · score {score}</source>
            <translation>第 {beam} 束 · 得分 {score}</translation>
        </message>
    </context>
    <context>
        <name>beam_tree</name>
        <message>
            <source>kept</source>
            <translation>保留</translation>
        </message>
        <message>
            <source>pruned</source>
            <translation>剪除</translation>
        </message>
        <message>
            <source>finished</source>
            <translation>已完成</translation>
        </message>
        <message>
            <source>{name} — beam hypotheses over steps</source>
            <translation>{name} — 各步的束搜索候选</translation>
        </message>
        <message>
            <source>No beam lane selected</source>
            <translation>未选择束搜索车道</translation>
        </message>
        <message>
            <source>&lt;span style="color:{kept}"&gt;●&lt;/span&gt;&amp;nbsp;kept&amp;nbsp;&amp;nbsp; &lt;span style="color:{pruned}"&gt;○&lt;/span&gt;&amp;nbsp;pruned&amp;nbsp;&amp;nbsp; &lt;span style="color:{finished}"&gt;★&lt;/span&gt;&amp;nbsp;finished&amp;nbsp;&amp;nbsp; &lt;span style="color:{best}"&gt;━━&lt;/span&gt;&amp;nbsp;best sequence&amp;nbsp;&amp;nbsp; &lt;span style="color:#555"&gt;hover: token, score · click: select step · wheel/drag: zoom/pan&lt;/span&gt;</source>
            <translation>&lt;span style="color:{kept}"&gt;●&lt;/span&gt;&amp;nbsp;保留&amp;nbsp;&amp;nbsp; &lt;span style="color:{pruned}"&gt;○&lt;/span&gt;&amp;nbsp;剪除&amp;nbsp;&amp;nbsp; &lt;span style="color:{finished}"&gt;★&lt;/span&gt;&amp;nbsp;已结束&amp;nbsp;&amp;nbsp; &lt;span style="color:{best}"&gt;━━&lt;/span&gt;&amp;nbsp;最佳序列&amp;nbsp;&amp;nbsp; &lt;span style="color:#555"&gt;悬停：词元、得分 · 单击：选中该步 · 滚轮/拖动：缩放/平移&lt;/span&gt;</translation>
        </message>
        <message>
            <source>step</source>
            <translation>步</translation>
        </message>
        <message>
            <source>beam slot</source>
            <translation>束位</translation>
        </message>
        <message>
            <source>prompt</source>
            <translation>提示词</translation>
        </message>
        <message>
            <source>step {step} · slot {slot} · {kind}
token “{token}” (id {token_id})
score {score} · parent slot {parent}</source>
            <translation>第 {step} 步 · 槽位 {slot} · {kind}
词元“{token}”（id {token_id}）
得分 {score} · 父槽位 {parent}</translation>
        </message>
    </context>
    <context>
        <name>chain</name>
        <message>
            <source>transformers order</source>
            <translation>transformers 顺序</translation>
        </message>
        <message>
            <source>llama.cpp order</source>
            <translation>llama.cpp 顺序</translation>
        </message>
        <message>
            <source>custom order</source>
            <translation>自定义顺序</translation>
        </message>
        <message>
            <source>transformers applies temperature before its truncations, llama.cpp after them: the same settings give different distributions. Reorder the chain below for an order of your own.</source>
            <translation>transformers 在截断之前应用温度，llama.cpp 在截断之后：同样的设置会得到不同的分布。在下方重新排列处理链，可得到自己的顺序。</translation>
        </message>
        <message>
            <source>The processors this lane applies, first to last: drag one, or select it and use ▲▼, to change the order</source>
            <translation>此车道依次应用的处理器：拖动其中一个，或选中后用 ▲▼ 改变顺序</translation>
        </message>
        <message>
            <source>Apply the selected processor earlier</source>
            <translation>提前应用所选处理器</translation>
        </message>
        <message>
            <source>Apply the selected processor later</source>
            <translation>推后应用所选处理器</translation>
        </message>
        <message>
            <source>beam search ({beams})</source>
            <translation>束搜索（{beams}）</translation>
        </message>
        <message>
            <source>sample</source>
            <translation>采样</translation>
        </message>
        <message>
            <source>argmax</source>
            <translation>取最大值</translation>
        </message>
        <message>
            <source>no processors: {selector} of the model's distribution</source>
            <translation>无处理器：对模型的分布{selector}</translation>
        </message>
        <message>
            <source>then {selector}</source>
            <translation>然后{selector}</translation>
        </message>
    </context>
    <context>
        <name>chart_data</name>
        <message>
            <source>{value}  (raw {raw})</source>
            <translation>{value}（原始 {raw}）</translation>
        </message>
        <message>
            <source>p(chosen)</source>
            <translation>p(所选)</translation>
        </message>
        <message>
            <source>entropy</source>
            <translation>熵</translation>
        </message>
        <message>
            <source>nats</source>
            <translation>奈特</translation>
        </message>
        <message>
            <source>margin</source>
            <translation>差值</translation>
        </message>
        <message>
            <source>kept set</source>
            <translation>保留集</translation>
        </message>
        <message>
            <source>{count} tokens</source>
            <translation>{count} 个词元</translation>
        </message>
        <message>
            <source>tail mass</source>
            <translation>尾部概率质量</translation>
        </message>
        <message>
            <source>varentropy</source>
            <translation>变熵</translation>
        </message>
        <message>
            <source>nats²</source>
            <translation>奈特²</translation>
        </message>
        <message>
            <source>draw u</source>
            <translation>抽样值 u</translation>
        </message>
        <message>
            <source>▲ critical point</source>
            <translation>▲ 临界点</translation>
        </message>
        <message>
            <source>◆ first divergence from the reference</source>
            <translation>◆ 与参照车道的首次分歧</translation>
        </message>
        <message>
            <source>↳ branch point</source>
            <translation>↳ 分支点</translation>
        </message>
        <message>
            <source>★ forced</source>
            <translation>★ 强制</translation>
        </message>
        <message>
            <source>flags</source>
            <translation>标记</translation>
        </message>
        <message>
            <source>adaptive</source>
            <translation>自适应</translation>
        </message>
        <message>
            <source>XTC coin</source>
            <translation>XTC 硬币</translation>
        </message>
        <message>
            <source>mirostat μ</source>
            <translation>mirostat μ</translation>
        </message>
        <message>
            <source>bits</source>
            <translation>比特</translation>
        </message>
        <message>
            <source>argmax (sure)</source>
            <translation>取最大值（确定）</translation>
        </message>
        <message>
            <source>sample</source>
            <translation>采样</translation>
        </message>
        <message>
            <source>widen (higher T, top-k)</source>
            <translation>放宽（更高的 T、top-k）</translation>
        </message>
        <message>
            <source>raw (before the chain)</source>
            <translation>原始（处理链之前）</translation>
        </message>
        <message>
            <source>✗ removed here</source>
            <translation>✗ 在此被去掉</translation>
        </message>
        <message>
            <source>{draw} in [{low}, {high})</source>
            <translation>{draw}，落在 [{low}, {high})</translation>
        </message>
        <message>
            <source>p(chosen), raw</source>
            <translation>p(所选)，原始</translation>
        </message>
        <message>
            <source>entropy (nats)</source>
            <translation>熵（奈特）</translation>
        </message>
        <message>
            <source>entropy raw (nats)</source>
            <translation>原始熵（奈特）</translation>
        </message>
        <message>
            <source>margin top1−top2</source>
            <translation>首位与次位之差</translation>
        </message>
        <message>
            <source>margin top1−top2, raw</source>
            <translation>首位与次位之差，原始</translation>
        </message>
    </context>
    <context>
        <name>compare_view</name>
        <message>
            <source>the other lane's “{token}” is a token of another tokenizer</source>
            <translation>另一条车道的“{token}”是另一种分词器的词元</translation>
        </message>
        <message>
            <source>both lanes chose the same token here</source>
            <translation>两条车道在这里选了同一个词元</translation>
        </message>
        <message>
            <source>the other lane's {token} is filtered out or outside the recorded top {count} here</source>
            <translation>另一车道的 {token} 在这里已被过滤，或不在记录的前 {count} 名之内</translation>
        </message>
        <message>
            <source>the other lane's {token} has p {p} (rank {rank}) here</source>
            <translation>另一车道的 {token} 在这里的 p 为 {p}（第 {rank} 名）</translation>
        </message>
        <message>
            <source>Select a step to compare two lanes there</source>
            <translation>选择一步，在该处比较两条车道</translation>
        </message>
        <message>
            <source>The lane the selected lane is compared with (the reference lane by default)</source>
            <translation>与所选车道比较的车道（默认是参照车道）</translation>
        </message>
        <message>
            <source>token-aligned: both lanes share a tokenizer and are compared step by step; by text: the lanes' tokenizers differ, and the other lane's step is the one at the same place of the text</source>
            <translation>按词元对齐：两条车道使用同一分词器，逐步比较；按文本：两条车道的分词器不同，另一条车道的步是文本中同一位置的那一步</translation>
        </message>
        <message>
            <source>compare with</source>
            <translation>比较对象</translation>
        </message>
        <message>
            <source>&lt;span style="color:{CHOSEN_COLOUR}"&gt;■&lt;/span&gt;&amp;nbsp;this lane's choice &amp;nbsp; &lt;span style="color:{OTHER_COLOUR}"&gt;■&lt;/span&gt;&amp;nbsp;the other lane's choice &amp;nbsp; &lt;span style="color:{PROCESSED_COLOUR}"&gt;■&lt;/span&gt;&amp;nbsp;p after processors &amp;nbsp; &lt;span style="color:{DRAW_COLOUR}"&gt;┃&lt;/span&gt;&amp;nbsp;draw u (cumulative)</source>
            <translation>&lt;span style="color:{CHOSEN_COLOUR}"&gt;■&lt;/span&gt;&amp;nbsp;本车道的选择 &amp;nbsp; &lt;span style="color:{OTHER_COLOUR}"&gt;■&lt;/span&gt;&amp;nbsp;另一车道的选择 &amp;nbsp; &lt;span style="color:{PROCESSED_COLOUR}"&gt;■&lt;/span&gt;&amp;nbsp;处理器处理后的 p &amp;nbsp; &lt;span style="color:{DRAW_COLOUR}"&gt;┃&lt;/span&gt;&amp;nbsp;抽样值 u（累积）</translation>
        </message>
        <message>
            <source>probability</source>
            <translation>概率</translation>
        </message>
        <message>
            <source>step {step}: {lane} chose “{token}”, {other} chose “{other_token}”</source>
            <translation>第 {step} 步：{lane} 选了“{token}”，{other} 选了“{other_token}”</translation>
        </message>
        <message>
            <source>step {step}: {lane} chose “{token}”; at the same place of the text (its step {other_step}) {other} chose “{other_token}”</source>
            <translation>第 {step} 步：{lane} 选择了“{token}”；在文本的同一位置（其第 {other_step} 步），{other} 选择了“{other_token}”</translation>
        </message>
        <message>
            <source>&lt;b&gt;{name}&lt;/b&gt;: chose “{token}” p {p}; </source>
            <translation>&lt;b&gt;{name}&lt;/b&gt;：选了“{token}”，p {p}；</translation>
        </message>
        <message>
            <source>; draw u = {draw}</source>
            <translation>；抽样值 u = {draw}</translation>
        </message>
        <message>
            <source>The other lane has no step here</source>
            <translation>另一条车道在这里没有这一步</translation>
        </message>
        <message>
            <source>Select a step (e.g. a ◆ divergence) to compare two lanes there</source>
            <translation>选择一步（例如 ◆ 分歧点），在该处比较两条车道</translation>
        </message>
    </context>
    <context>
        <name>controller</name>
        <message>
            <source>Stop the run before switching models.</source>
            <translation>请先停止运行，再切换模型。</translation>
        </message>
        <message>
            <source>Stop the run before switching devices.</source>
            <translation>请先停止运行，再切换设备。</translation>
        </message>
        <message>
            <source>The run was made on the server {name}: the window runs served models as lanes beside its own (the model picker's “Add a server…”); `branchpoint replay FILE` replays the run there.</source>
            <translation>这次运行是在服务器 {name} 上做的：窗口把服务器上的模型作为车道与本地模型并排运行（模型选择器的“添加服务器…”）；用 `branchpoint replay FILE` 在那里重放这次运行。</translation>
        </message>
        <message>
            <source>The run was made with model {name!r}, which is not prepared here.</source>
            <translation>该运行使用的模型 {name!r} 在本机尚未准备。</translation>
        </message>
        <message>
            <source>stopping at the next step…</source>
            <translation>将在下一步停止…</translation>
        </message>
        <message>
            <source>Nothing to save yet: run or open a run first.</source>
            <translation>还没有可保存的内容：请先运行或打开一次运行。</translation>
        </message>
        <message>
            <source>Could not save {path}: {error}. The run is still here.</source>
            <translation>无法保存 {path}：{error}。运行仍在这里。</translation>
        </message>
        <message>
            <source>saved {path}</source>
            <translation>已保存 {path}</translation>
        </message>
        <message>
            <source>Stop the run before opening another.</source>
            <translation>请先停止运行，再打开另一次运行。</translation>
        </message>
        <message>
            <source>Could not open {path}: {error}</source>
            <translation>无法打开 {path}：{error}</translation>
        </message>
        <message>
            <source>{name} (opened run)</source>
            <translation>{name}（打开的运行）</translation>
        </message>
        <message>
            <source>opened {path}</source>
            <translation>已打开 {path}</translation>
        </message>
        <message>
            <source>{message}. The text so far is kept.</source>
            <translation>{message}。已生成的文本会保留。</translation>
        </message>
        <message>
            <source>failed</source>
            <translation>失败</translation>
        </message>
        <message>
            <source>The run stopped early: {error}. The text so far is kept.</source>
            <translation>运行提前停止：{error}。已生成的文本会保留。</translation>
        </message>
        <message>
            <source>“{name}” stopped at step {step}: {error}</source>
            <translation>“{name}”在第 {step} 步停止：{error}</translation>
        </message>
        <message>
            <source>the other lanes went on</source>
            <translation>其他车道继续运行</translation>
        </message>
        <message>
            <source>its text so far is kept</source>
            <translation>已生成的文本会保留</translation>
        </message>
        <message>
            <source>{words} ({others}).</source>
            <translation>{words}（{others}）。</translation>
        </message>
        <message>
            <source>stopped</source>
            <translation>已停止</translation>
        </message>
        <message>
            <source>stopped early</source>
            <translation>提前停止</translation>
        </message>
        <message>
            <source>done</source>
            <translation>完成</translation>
        </message>
        <message>
            <source>Could not make the lane: {message}. Nothing was added.</source>
            <translation>无法生成该车道：{message}。未添加任何内容。</translation>
        </message>
        <message>
            <source>Branching needs a finished run and a model.</source>
            <translation>分支需要一次已完成的运行和一个模型。</translation>
        </message>
        <message>
            <source>“{name}” runs as a fan-out: set its fan-out to 1 to branch from it.</source>
            <translation>“{name}”以扇出方式运行：将其扇出设为 1 后才能从它分支。</translation>
        </message>
        <message>
            <source>“{name}” ran on a model of another tokenizer: a branch from it continues its tokens on its model ({model}); set the branch strategy's model to it.</source>
            <translation>“{name}”运行在另一种分词器的模型上：从它分支会在它的模型（{model}）上继续它的词元；请把分支策略的模型设为该模型。</translation>
        </message>
        <message>
            <source>Cannot branch here: {error}.</source>
            <translation>无法在此分支：{error}。</translation>
        </message>
        <message>
            <source>Replaying the branch not taken needs a finished run and a model.</source>
            <translation>重放未走的分支需要一次已完成的运行和一个模型。</translation>
        </message>
        <message>
            <source>This step has no runner-up to replay (a single candidate).</source>
            <translation>这一步没有可重放的次优词元（只有一个候选）。</translation>
        </message>
        <message>
            <source>“{name}” runs as a fan-out: set its fan-out to 1 to replay a step of it.</source>
            <translation>“{name}”以扇出方式运行：将其扇出设为 1 后才能重放其中一步。</translation>
        </message>
        <message>
            <source>{lane} ↳{step} runner-up</source>
            <translation>{lane} ↳{step} 次优</translation>
        </message>
        <message>
            <source>Cannot replay the branch not taken: {error}.</source>
            <translation>无法重放未走的分支：{error}。</translation>
        </message>
        <message>
            <source>removed branch lane “{name}”</source>
            <translation>已移除分支车道“{name}”</translation>
        </message>
        <message>
            <source>no branch lane to undo</source>
            <translation>没有可撤销的分支车道</translation>
        </message>
        <message>
            <source>“{name}” now keeps seed {seed} so its branch can be re-run; set its seed back to auto for fresh samples (its branch lanes then run as ordinary lanes).</source>
            <translation>“{name}”现在固定使用种子 {seed}，以便其分支可以重新运行；若想重新采样，请把种子改回“自动”（它的分支车道随后将作为普通车道运行）。</translation>
        </message>
        <message>
            <source>Bringing a node back needs a run (run or open one) and a model.</source>
            <translation>恢复节点需要一次运行（运行或打开一次）和一个模型。</translation>
        </message>
        <message>
            <source>Cannot bring the node back: {error}.</source>
            <translation>无法恢复该节点：{error}。</translation>
        </message>
        <message>
            <source>Could not explain the lane: {message}.</source>
            <translation>无法解释该车道：{message}。</translation>
        </message>
        <message>
            <source>explained {len} tokens ({layers} layers × {heads} heads): see the Attention and Logit lens tabs</source>
            <translation>已解释 {len} 个词元（{layers} 层 × {heads} 个头）：请查看“注意力”和“Logit 透镜”标签页</translation>
        </message>
        <message>
            <source>Explaining needs a lane of a finished run: run or open one, then pick a lane.</source>
            <translation>解释需要已完成运行中的一条车道：请先运行或打开一次运行，再选择车道。</translation>
        </message>
        <message>
            <source>“{name}” ran on {model}: Explain looks inside the run's model only ({run}).</source>
            <translation>“{name}”运行在 {model} 上：解释只查看运行的模型（{run}）内部。</translation>
        </message>
        <message>
            <source>Explaining “{name}” needs the model it was made with: choose it in the Model list.</source>
            <translation>解释“{name}”需要生成它的模型：请在“模型”列表中选择该模型。</translation>
        </message>
        <message>
            <source>Cannot explain “{name}”: the prompt: {error}.</source>
            <translation>无法解释“{name}”：提示词：{error}。</translation>
        </message>
        <message>
            <source>Explaining the first {len} of “{name}”'s {sequence} tokens (prompt included): explain takes at most {len2}, as attention weights grow as tokens squared.</source>
            <translation>只解释“{name}”共 {sequence} 个词元（含提示词）中的前 {len} 个：注意力权重随词元数的平方增长，因此解释最多处理 {len2} 个。</translation>
        </message>
        <message>
            <source>“{name}” is explained: see the Attention and Logit lens tabs</source>
            <translation>“{name}”已解释：请查看“注意力”和“Logit 透镜”标签页</translation>
        </message>
        <message>
            <source>“{lane}” cannot be explained: its inspection model is built from the float32 weights the model was exported from, and {error}. Prepare the model from its GGUF (the default model) or from a local Hugging Face folder.</source>
            <translation>无法解释“{lane}”：它的检查模型要从导出该模型时使用的 float32 权重构建，而{error}。请从模型的 GGUF（默认模型）或本地 Hugging Face 文件夹准备模型。</translation>
        </message>
        <message>
            <source>“{lane}” was not explained: {why}.</source>
            <translation>“{lane}”未被解释：{why}。</translation>
        </message>
        <message>
            <source>Could not compare the models: {message}.</source>
            <translation>无法比较这两个模型：{message}。</translation>
        </message>
        <message>
            <source>compared “{lane}” with {model}: see the Model comparison tab</source>
            <translation>已将“{lane}”与 {model} 比较：见“模型比较”标签页</translation>
        </message>
        <message>
            <source>Comparing with another model needs a lane of a finished run and its model: run, then pick a lane.</source>
            <translation>与另一个模型比较需要一次已完成运行中的车道及其模型：先运行，再选一条车道。</translation>
        </message>
        <message>
            <source>“{name}” runs as a fan-out: compare a lane without one.</source>
            <translation>“{name}”以扇出方式运行：请比较没有扇出的车道。</translation>
        </message>
        <message>
            <source>“{name}” ran on a model of another tokenizer: the teacher-forced comparison reads a lane's tokens with the run's model, token by token.</source>
            <translation>“{name}”运行在另一种分词器的模型上：教师强制比较用本次运行的模型逐个词元读取车道的词元。</translation>
        </message>
        <message>
            <source>{model} is the run's own model: pick another one to compare with.</source>
            <translation>{model} 就是该运行自身的模型：请另选一个模型来比较。</translation>
        </message>
        <message>
            <source>Cannot compare with {model}: it is not prepared here (python main.py prepare --variant …, or Add local folder in the Model list).</source>
            <translation>无法与 {model} 比较：它在本机尚未准备（python main.py prepare --variant …，或在“模型”列表中选择“添加本地文件夹…”）。</translation>
        </message>
        <message>
            <source>its vocabulary differs ({a} vs {b} tokens)</source>
            <translation>它的词表不同（{a} 对 {b} 个词元）</translation>
        </message>
        <message>
            <source>its vocabulary has other tokens ({a} each)</source>
            <translation>它的词表含有不同的词元（各 {a} 个）</translation>
        </message>
        <message>
            <source>Cannot compare {model} with {other} token by token: {why}. A teacher-forced comparison needs the same tokenizer.</source>
            <translation>无法逐词元比较 {model} 与 {other}：{why}。教师强制的比较需要同一个分词器。</translation>
        </message>
        <message>
            <source>Replay needs a run (run or open one) and a model.</source>
            <translation>重放需要一次运行（运行或打开一次）和一个模型。</translation>
        </message>
        <message>
            <source>Cannot replay: {error}.</source>
            <translation>无法重放：{error}。</translation>
        </message>
        <message>
            <source>replay: every token identical to the saved run</source>
            <translation>重放：每个词元都与保存的运行完全相同</translation>
        </message>
        <message>
            <source>Replay differs from the saved run: {differences}.</source>
            <translation>重放结果与保存的运行不同：{differences}。</translation>
        </message>
        <message>
            <source>Run again and compare needs a run to compare with (run or open one).</source>
            <translation>“再次运行并比较”需要一次可比较的运行（先运行或打开一次）。</translation>
        </message>
        <message>
            <source>Cannot run: {error}.</source>
            <translation>无法运行：{error}。</translation>
        </message>
        <message>
            <source>No model: choose or prepare one in the Model list first.</source>
            <translation>没有模型：请先在“模型”列表中选择或准备一个。</translation>
        </message>
        <message>
            <source>The prompt is empty: type something for the lanes to continue.</source>
            <translation>提示词为空：请输入一些内容供各车道续写。</translation>
        </message>
        <message>
            <source>The prompt changed: these lanes run without the tokens picked by hand (and the length step mode stopped at) for the last prompt: {lanes}.</source>
            <translation>提示词已更改：以下车道不再使用为上一个提示词手动选取的词元（以及单步模式停下时的长度）：{lanes}。</translation>
        </message>
        <message>
            <source>its parent “{parent}” fans out now</source>
            <translation>它的父车道“{parent}”现在扇出</translation>
        </message>
        <message>
            <source>the prompt changed</source>
            <translation>提示词已更改</translation>
        </message>
        <message>
            <source>These branch lanes now run as ordinary lanes of their own strategy: {lanes}.</source>
            <translation>这些分支车道现在按各自的策略作为普通车道运行：{lanes}。</translation>
        </message>
        <message>
            <source>its parent “{parent}” is gone</source>
            <translation>它的父车道“{parent}”已不存在</translation>
        </message>
        <message>
            <source>its parent “{parent}” draws with a fresh seed each run</source>
            <translation>它的父车道“{parent}”每次运行都用新的种子抽样</translation>
        </message>
        <message>
            <source>run again: every lane's tokens identical to the previous run</source>
            <translation>再次运行：每条车道的词元都与上一次运行相同</translation>
        </message>
        <message>
            <source>Run again, against the previous run: {differences}.</source>
            <translation>再次运行，与上一次运行相比：{differences}。</translation>
        </message>
        <message>
            <source>step mode: double-click a candidate to take it, Run for one step of every lane</source>
            <translation>单步模式：双击候选词元以改选它，运行让每条车道前进一步</translation>
        </message>
        <message>
            <source>Step mode starts every lane at step 0: remove the branch lanes first (or Run them as ordinary lanes).</source>
            <translation>单步模式让每条车道从第 0 步开始：请先移除分支车道（或将它们作为普通车道运行）。</translation>
        </message>
        <message>
            <source>A beam lane's step in step mode is its search's: accept it (F8) or run the lane on (F9). To force a token, branch from the beam lane after step mode.</source>
            <translation>单步模式中，束搜索车道的一步由搜索决定：接受它（F8）或让该车道继续运行（F9）。若要强制某个词元，请在退出单步模式后从该束搜索车道分支。</translation>
        </message>
        <message>
            <source>In step mode a lane takes a token at its next step ({step}) only.</source>
            <translation>在单步模式下，车道只能在其下一步（{step}）改选词元。</translation>
        </message>
        <message>
            <source>step mode off: the lanes keep the steps taken</source>
            <translation>单步模式已关闭：各车道保留已走的步</translation>
        </message>
        <message>
            <source>temperature sweep of {lane} step {step}</source>
            <translation>{lane} 第 {step} 步的温度扫描</translation>
        </message>
        <message>
            <source>A temperature sweep needs a finished run and a model.</source>
            <translation>温度扫描需要一次已完成的运行和一个模型。</translation>
        </message>
        <message>
            <source>“{name}” runs as a fan-out: sweep a step of a lane without one.</source>
            <translation>“{name}”以扇出方式运行：请对没有扇出的车道中的一步做扫描。</translation>
        </message>
        <message>
            <source>Cannot sweep: {error}.</source>
            <translation>无法扫描：{error}。</translation>
        </message>
        <message>
            <source>Temperature fan-outs need a sampled lane: {refusal}.</source>
            <translation>温度扇出需要一条采样车道：{refusal}。</translation>
        </message>
        <message>
            <source>added {len} temperature fan-outs of “{name}”: Run to compare them</source>
            <translation>已为“{name}”添加 {len} 个温度扇出：运行后即可比较</translation>
        </message>
        <message>
            <source>Could not answer “why”: {message}.</source>
            <translation>无法回答“为什么”：{message}。</translation>
        </message>
    </context>
    <context>
        <name>critical_dialog</name>
        <message>
            <source>Critical points</source>
            <translation>临界点</translation>
        </message>
        <message>
            <source>▲ marks the steps where a small change would have picked another strong token.</source>
            <translation>▲ 标出那些稍有变化就会选中另一个强候选词元的步骤。</translation>
        </message>
    </context>
    <context>
        <name>entropy_plane</name>
        <message>
            <source>low H, low V: sure → argmax</source>
            <translation>低 H、低 V：确定 → 取最大值</translation>
        </message>
        <message>
            <source>low H, high V: a few strong candidates, forks → sample</source>
            <translation>低 H、高 V：少数强候选，分岔 → 采样</translation>
        </message>
        <message>
            <source>high H, low V: many alike → sample</source>
            <translation>高 H、低 V：众多相近候选 → 采样</translation>
        </message>
        <message>
            <source>high H, high V: lost → widen</source>
            <translation>高 H、高 V：迷失 → 放宽</translation>
        </message>
        <message>
            <source>raw distribution (what adaptive decides by)</source>
            <translation>原始分布（自适应据此决定）</translation>
        </message>
        <message>
            <source>after the lane's processors</source>
            <translation>经过车道的处理器之后</translation>
        </message>
        <message>
            <source>click a point to select its step</source>
            <translation>点击一个点以选中其步骤</translation>
        </message>
        <message>
            <source>entropy H (nats)</source>
            <translation>熵 H（奈特）</translation>
        </message>
        <message>
            <source>varentropy V (nats²)</source>
            <translation>变熵 V（奈特²）</translation>
        </message>
        <message>
            <source>{lane} · step {step}: H {entropy} nats, V {varentropy} nats²</source>
            <translation>{lane} · 第 {step} 步：H {entropy} 奈特，V {varentropy} 奈特²</translation>
        </message>
        <message>
            <source>raw</source>
            <translation>原始</translation>
        </message>
        <message>
            <source>Entropy × varentropy per step ({which})</source>
            <translation>每一步的熵 × 变熵（{which}）</translation>
        </message>
    </context>
    <context>
        <name>fanout_view</name>
        <message>
            <source>The fan-out lane shown (set a sampled lane's fan-out in the lanes editor)</source>
            <translation>所显示的扇出车道（在车道编辑器中设置采样车道的扇出）</translation>
        </message>
        <message>
            <source>Set a sampled lane's fan-out (lanes editor) and run: its members' tree shows here</source>
            <translation>为采样车道设置扇出（车道编辑器）并运行：各成员的树会显示在这里</translation>
        </message>
        <message>
            <source>hover a branch for its text · click selects its first member's step</source>
            <translation>悬停分支查看其文本 · 点击选中其第一个成员的该步</translation>
        </message>
        <message>
            <source>all steps</source>
            <translation>全部步骤</translation>
        </message>
        <message>
            <source>The tree opens on its splits: show every step (the wheel zooms, dragging pans)</source>
            <translation>树先显示各分叉处：显示全部步（滚轮缩放，拖动平移）</translation>
        </message>
        <message>
            <source>members</source>
            <translation>成员</translation>
        </message>
        <message>
            <source>step</source>
            <translation>步</translation>
        </message>
        <message>
            <source>mean entropy (nats)</source>
            <translation>平均熵（奈特）</translation>
        </message>
        <message>
            <source>mean margin top1−top2</source>
            <translation>首位与次位之差的平均值</translation>
        </message>
        <message>
            <source>fan-out of {lane}: {count} seeds</source>
            <translation>{lane} 的扇出：{count} 个种子</translation>
        </message>
        <message>
            <source>none</source>
            <translation>无</translation>
        </message>
        <message>
            <source>seeds {first}–{last}</source>
            <translation>种子 {first}–{last}</translation>
        </message>
        <message>
            <source>&lt;b&gt;{count} members&lt;/b&gt; ({seeds}) · &lt;b&gt;{distinct}&lt;/b&gt; distinct continuations · two members part at step &lt;b&gt;{pairwise}&lt;/b&gt; on average · a member is on its own (differs from every other) from step &lt;b&gt;{first}&lt;/b&gt; on average · {splits} splits</source>
            <translation>&lt;b&gt;{count} 个成员&lt;/b&gt;（{seeds}）· &lt;b&gt;{distinct}&lt;/b&gt; 种不同的续写 · 两个成员平均在第 &lt;b&gt;{pairwise}&lt;/b&gt; 步分开 · 一个成员平均从第 &lt;b&gt;{first}&lt;/b&gt; 步起独自前行（与其他每个成员都不同）· {splits} 处分叉</translation>
        </message>
        <message>
            <source>steps {start}–{max} · members {names}: “{branch_text}”</source>
            <translation>第 {start}–{max} 步 · 成员 {names}：“{branch_text}”</translation>
        </message>
    </context>
    <context>
        <name>faults</name>
        <message>
            <source>Unexpected error: {error}. The window may show something out of date until the next run; the details are in {log}.</source>
            <translation>意外错误：{error}。在下次运行之前，窗口显示的内容可能已过时；详细信息见 {log}。</translation>
        </message>
    </context>
    <context>
        <name>first_run</name>
        <message>
            <source>Choose a model</source>
            <translation>选择模型</translation>
        </message>
        <message>
            <source>Branchpoint shows how a language model chooses its tokens. Choose the model to prepare: it is downloaded once, converted and exported to ONNX into your cache folder. More can be added later from the model picker.</source>
            <translation>Branchpoint 展示语言模型如何选择词元。请选择要准备的模型：它只下载一次，转换并导出为 ONNX，存入你的缓存文件夹。以后可以在模型选择器中添加更多模型。</translation>
        </message>
        <message>
            <source>Prepare</source>
            <translation>准备</translation>
        </message>
        <message>
            <source>Not now</source>
            <translation>暂不</translation>
        </message>
    </context>
    <context>
        <name>hub_dialog</name>
        <message>
            <source>Add model from Hugging Face</source>
            <translation>从 Hugging Face 添加模型</translation>
        </message>
        <message>
            <source>main (a branch, tag or commit)</source>
            <translation>main（分支、标签或提交）</translation>
        </message>
        <message>
            <source>only for gated or private models</source>
            <translation>仅用于受限或私有模型</translation>
        </message>
        <message>
            <source>Used for this download only and never saved. Without one, the HF_TOKEN variable or huggingface_hub's login is used. Make one at https://huggingface.co/settings/tokens</source>
            <translation>仅用于本次下载，从不保存。不填写时使用 HF_TOKEN 变量或 huggingface_hub 的登录信息。在 https://huggingface.co/settings/tokens 创建令牌</translation>
        </message>
        <message>
            <source>Model id</source>
            <translation>模型 ID</translation>
        </message>
        <message>
            <source>Revision</source>
            <translation>版本</translation>
        </message>
        <message>
            <source>Token</source>
            <translation>令牌</translation>
        </message>
        <message>
            <source>Only the model's configuration, tokenizer and safetensors weights are downloaded — never its code. The download resumes where it stopped after a broken connection or Cancel.</source>
            <translation>只下载模型的配置、分词器和 safetensors 权重——从不下载其代码。连接中断或取消后，下载会从中断处继续。</translation>
        </message>
        <message>
            <source>Enter a model id and press Download.</source>
            <translation>输入模型 ID，然后点击“下载”。</translation>
        </message>
        <message>
            <source>download</source>
            <translation>下载</translation>
        </message>
        <message>
            <source>Download</source>
            <translation>下载</translation>
        </message>
        <message>
            <source>Enter a model id: owner/name, as on its hub page.</source>
            <translation>请输入模型 ID：所有者/名称，与其 Hub 页面上的一致。</translation>
        </message>
        <message>
            <source>{done} of {total}</source>
            <translation>{done} / {total}</translation>
        </message>
        <message>
            <source>Pickled weights</source>
            <translation>pickle 格式的权重</translation>
        </message>
        <message>
            <source>{reason}

Read them with torch's weights_only loader (tensors only, no code) and go on?</source>
            <translation>{reason}

用 torch 的 weights_only 加载器读取它们（只读张量，不执行代码）并继续吗？</translation>
        </message>
    </context>
    <context>
        <name>inside_data</name>
        <message>
            <source>‹start›</source>
            <translation>‹起始›</translation>
        </message>
    </context>
    <context>
        <name>inside_widgets</name>
        <message>
            <source>Explain this lane</source>
            <translation>解释这条车道</translation>
        </message>
        <message>
            <source>Run the lane's tokens through the model's inspection model once: every layer's attention per head and the logit lens (stored with the run)</source>
            <translation>用模型的检查模型把该车道的词元跑一遍：得到每层每个头的注意力和 logit 透镜（随运行一起保存）</translation>
        </message>
        <message>
            <source>Explain “{name}”</source>
            <translation>解释“{name}”</translation>
        </message>
    </context>
    <context>
        <name>inspector</name>
        <message>
            <source>▲ branch not taken</source>
            <translation>▲ 未走的分支</translation>
        </message>
        <message>
            <source>↺ runner-up</source>
            <translation>↺ 次优词元</translation>
        </message>
        <message>
            <source>No step selected</source>
            <translation>未选择步骤</translation>
        </message>
        <message>
            <source>side by side</source>
            <translation>并排</translation>
        </message>
        <message>
            <source>overlaid</source>
            <translation>叠加</translation>
        </message>
        <message>
            <source>Raw and processed bars side by side, or overlaid</source>
            <translation>原始和处理后的柱条并排显示或叠加显示</translation>
        </message>
        <message>
            <source>A new lane that takes this step's runner-up instead and continues with the same strategy and draws: how far does the other branch go?</source>
            <translation>新建一条车道，在这一步改选次优词元，并以相同的策略和抽样值继续：另一条分支会走多远？</translation>
        </message>
        <message>
            <source>raw</source>
            <translation>原始</translation>
        </message>
        <message>
            <source>after processors</source>
            <translation>处理器处理后</translation>
        </message>
        <message>
            <source>chosen</source>
            <translation>所选</translation>
        </message>
        <message>
            <source>cumulative (top-p's view)</source>
            <translation>累积（top-p 的视角）</translation>
        </message>
        <message>
            <source>kept</source>
            <translation>保留</translation>
        </message>
        <message>
            <source>draw u</source>
            <translation>抽样值 u</translation>
        </message>
        <message>
            <source>probability</source>
            <translation>概率</translation>
        </message>
        <message>
            <source>cumulative</source>
            <translation>累积</translation>
        </message>
        <message>
            <source>top-k</source>
            <translation>top-k</translation>
        </message>
        <message>
            <source>min-p</source>
            <translation>min-p</translation>
        </message>
        <message>
            <source>top-p</source>
            <translation>top-p</translation>
        </message>
        <message>
            <source>The lane's chain, stage by stage: after each processor, the tokens it left, the share of the probability before it that it kept, and the chosen token's rank and probability</source>
            <translation>车道的处理链，逐阶段：每个处理器之后剩下的词元、它保留了之前概率的多少份额，以及所选词元的排名和概率</translation>
        </message>
        <message>
            <source> · forced</source>
            <translation> · 强制</translation>
        </message>
        <message>
            <source> · proposed, not yet taken</source>
            <translation> · 建议的一步，尚未采纳</translation>
        </message>
        <message>
            <source> · partial: the server did not return {mass} of the raw probability (bars renormalised over what it returned)</source>
            <translation> · 部分：服务器未返回 {mass} 的原始概率（条形按已返回的词元重新归一化）</translation>
        </message>
        <message>
            <source>{name} · step {step} · chose “{token}” (id {token_id}){forced}</source>
            <translation>{name} · 第 {step} 步 · 选了“{token}”（id {token_id}）{forced}</translation>
        </message>
        <message>
            <source>click a row: numbers · double-click: branch</source>
            <translation>单击一行：查看数值 · 双击：分支</translation>
        </message>
        <message>
            <source>stage</source>
            <translation>阶段</translation>
        </message>
        <message>
            <source>mass kept</source>
            <translation>保留的概率</translation>
        </message>
        <message>
            <source>rank</source>
            <translation>名次</translation>
        </message>
        <message>
            <source>p</source>
            <translation>p</translation>
        </message>
        <message>
            <source>The chain, stage by stage, for “{token}” (click another row for its own)</source>
            <translation>逐级处理链：“{token}”（单击其他行可查看该行的）</translation>
        </message>
        <message>
            <source>The chain, stage by stage, for “{token}” (not chosen; ? where the step's record does not say)</source>
            <translation>逐级处理链：“{token}”（未被选中；? 表示该步的记录无法确定）</translation>
        </message>
        <message>
            <source>filtered</source>
            <translation>已过滤</translation>
        </message>
        <message>
            <source>removed by {stage}</source>
            <translation>被 {stage} 移除</translation>
        </message>
        <message>
            <source>&lt;b&gt;“{token}” (id {token_id}): p {processed}, raw {raw}&lt;/b&gt;</source>
            <translation>&lt;b&gt;“{token}”（id {token_id}）：p {processed}，原始 {raw}&lt;/b&gt;</translation>
        </message>
        <message>
            <source>Branch a new lane with “{token}” at step {step}</source>
            <translation>在第 {step} 步以“{token}”分出一条新车道</translation>
        </message>
        <message>
            <source>Force “{token}” for all lanes at step {step}</source>
            <translation>在第 {step} 步对全部车道强制“{token}”</translation>
        </message>
        <message>
            <source>Why the chosen token and not “{token}”?</source>
            <translation>为什么选了这个词元而不是“{token}”？</translation>
        </message>
    </context>
    <context>
        <name>jobs</name>
        <message>
            <source>opening the inspection model of {model} (once per model)…</source>
            <translation>正在打开 {model} 的检查模型（每个模型一次）…</translation>
        </message>
        <message>
            <source>explaining {count} tokens: attention of every layer and head, logit lens…</source>
            <translation>正在解释 {count} 个词元：每层每个头的注意力、Logit 透镜…</translation>
        </message>
        <message>
            <source>{lane}'s tokens through {model}</source>
            <translation>用 {model} 读取 {lane} 的词元</translation>
        </message>
        <message>
            <source>free-running greedy of {model}</source>
            <translation>{model} 的自由贪心续写</translation>
        </message>
        <message>
            <source>comparing models ({done}/4): {stage}…</source>
            <translation>正在比较模型（{done}/4）：{stage}…</translation>
        </message>
        <message>
            <source>loading {model}…</source>
            <translation>正在加载 {model}…</translation>
        </message>
    </context>
    <context>
        <name>lane_fields</name>
        <message>
            <source>{off} = off.</source>
            <translation>{off} = 关闭。</translation>
        </message>
        <message>
            <source>{unset} = unset.</source>
            <translation>{unset} = 未设置。</translation>
        </message>
        <message>
            <source>Allowed: {allowed}. Follows transformers' {name}.</source>
            <translation>允许值：{allowed}。与 transformers 的 {name} 一致。</translation>
        </message>
        <message>
            <source>Allowed: {allowed}. Follows {name}.</source>
            <translation>允许值：{allowed}。与 {name} 一致。</translation>
        </message>
        <message>
            <source>Separate several with |; write a newline as \n. Empty = none.</source>
            <translation>多个之间用 | 分隔；换行写作 \n。留空 = 无。</translation>
        </message>
        <message>
            <source>Token ids separated by |, e.g. 28|30. Empty = none.</source>
            <translation>词元 id 之间用 | 分隔，例如 28|30。留空 = 无。</translation>
        </message>
        <message>
            <source>Sequences separated by |, the ids of one by spaces, e.g. 5 6|7. Empty = none.</source>
            <translation>序列之间用 | 分隔，同一序列的 id 之间用空格分隔，例如 5 6|7。留空 = 无。</translation>
        </message>
        <message>
            <source>Each sequence, a colon and its bias, separated by |, e.g. 5 6:-2.5|7:1. Empty = none.</source>
            <translation>每项为序列、冒号和偏置，各项之间用 | 分隔，例如 5 6:-2.5|7:1。留空 = 无。</translation>
        </message>
        <message>
            <source>beam {beams}</source>
            <translation>束搜索 {beams}</translation>
        </message>
        <message>
            <source>sample</source>
            <translation>采样</translation>
        </message>
        <message>
            <source>adaptive</source>
            <translation>自适应</translation>
        </message>
        <message>
            <source>seed {seed}</source>
            <translation>种子 {seed}</translation>
        </message>
        <message>
            <source>greedy</source>
            <translation>贪心</translation>
        </message>
        <message>
            <source>max {count}</source>
            <translation>最多 {count}</translation>
        </message>
        <message>
            <source>stop {strings}</source>
            <translation>停止于 {strings}</translation>
        </message>
        <message>
            <source>forced @{step}</source>
            <translation>强制 @{step}</translation>
        </message>
        <message>
            <source>branch of {parent} @ {step}</source>
            <translation>{parent} 的分支 @ {step}</translation>
        </message>
        <message>
            <source>run's</source>
            <translation>随运行</translation>
        </message>
        <message>
            <source>auto</source>
            <translation>自动</translation>
        </message>
        <message>
            <source>all</source>
            <translation>全部</translation>
        </message>
    </context>
    <context>
        <name>lane_map</name>
        <message>
            <source>What a cell's colour shows</source>
            <translation>单元格颜色所表示的量</translation>
        </message>
        <message>
            <source>step</source>
            <translation>步</translation>
        </message>
        <message>
            <source>{name} · step {step} · “{token}” · {metric} = {value:.4f}</source>
            <translation>{name} · 第 {step} 步 · “{token}” · {metric} = {value:.4f}</translation>
        </message>
        <message>
            <source>hover a cell for its token · click selects the step · click a fan-out's name: its members</source>
            <translation>悬停单元格查看词元 · 点击选中该步 · 点击扇出的名称：展开其成员</translation>
        </message>
    </context>
    <context>
        <name>lanes_editor</name>
        <message>
            <source> (for greedy decoding, turn do_sample off)</source>
            <translation>（若要贪心解码，请关闭 do_sample）</translation>
        </message>
        <message>
            <source>none</source>
            <translation>无</translation>
        </message>
        <message>
            <source>chain</source>
            <translation>处理链</translation>
        </message>
        <message>
            <source>The processors this lane applies, in order (transformers' order by default)</source>
            <translation>该车道依次应用的处理器（默认采用 transformers 的顺序）</translation>
        </message>
        <message>
            <source>model</source>
            <translation>模型</translation>
        </message>
        <message>
            <source>(run's model)</source>
            <translation>（运行的模型）</translation>
        </message>
        <message>
            <source>The model this lane runs on: the run's (the model picker's) or another prepared model, such as a precision variant. Lanes on one model share its batched steps; a model of another tokenizer reads the prompt with its own and is compared with the others by text.</source>
            <translation>此车道运行的模型：本次运行的模型（模型选择器中的），或另一个已准备的模型，例如某个精度变体。同一模型上的车道共享其批量步骤；另一种分词器的模型用自己的分词器读取提示，并按文本与其他车道比较。</translation>
        </message>
        <message>
            <source>Lane</source>
            <translation>车道</translation>
        </message>
        <message>
            <source>Strategy</source>
            <translation>策略</translation>
        </message>
        <message>
            <source>Double-click a name to rename the lane; select a lane to edit its parameters</source>
            <translation>双击名称可重命名车道；选中车道可编辑其参数</translation>
        </message>
        <message>
            <source>off</source>
            <translation>关闭</translation>
        </message>
        <message>
            <source>Run this sampled lane as K members (seeds seed, seed+1, …, all in the same batched steps) and see where they part in the Fan-out tab. off = the lane alone; up to {MAX_FANOUT}.</source>
            <translation>把这条采样车道作为 K 个成员运行（种子为 seed、seed+1、…，全部在同一批次的步骤中），并在“扇出”标签页查看它们在哪里分开。关闭 = 只运行该车道；最多 {MAX_FANOUT} 个。</translation>
        </message>
        <message>
            <source>fan-out (seeds)</source>
            <translation>扇出（种子数）</translation>
        </message>
        <message>
            <source>Add lane</source>
            <translation>添加车道</translation>
        </message>
        <message>
            <source>Add a new lane from a preset (Ctrl+L: greedy)</source>
            <translation>从预设添加新车道（Ctrl+L：贪心）</translation>
        </message>
        <message>
            <source>Use preset</source>
            <translation>用预设替换</translation>
        </message>
        <message>
            <source>Replace the selected lane's parameters by a preset's</source>
            <translation>用预设的参数替换所选车道的参数</translation>
        </message>
        <message>
            <source>Duplicate</source>
            <translation>复制</translation>
        </message>
        <message>
            <source>Copy the selected lane</source>
            <translation>复制所选车道</translation>
        </message>
        <message>
            <source>Remove</source>
            <translation>移除</translation>
        </message>
        <message>
            <source>Remove the selected lane</source>
            <translation>移除所选车道</translation>
        </message>
        <message>
            <source>Move the selected lane left</source>
            <translation>所选车道左移</translation>
        </message>
        <message>
            <source>Move the selected lane right</source>
            <translation>所选车道右移</translation>
        </message>
        <message>
            <source>Stop the run before changing lanes.</source>
            <translation>请先停止运行，再修改车道。</translation>
        </message>
        <message>
            <source>A run needs at least one lane.</source>
            <translation>一次运行至少需要一条车道。</translation>
        </message>
        <message>
            <source>{name}: double-click to rename</source>
            <translation>{name}：双击以重命名</translation>
        </message>
        <message>
            <source>Refused: {error}{hint}</source>
            <translation>已拒绝：{error}{hint}</translation>
        </message>
        <message>
            <source>Note: {note}.</source>
            <translation>注意：{note}。</translation>
        </message>
        <message>
            <source>a lane name cannot be empty</source>
            <translation>车道名称不能为空</translation>
        </message>
        <message>
            <source>another lane is already named “{name}”</source>
            <translation>已有另一条车道名为“{name}”</translation>
        </message>
        <message>
            <source>Refused: {reason}.</source>
            <translation>已拒绝：{reason}。</translation>
        </message>
        <message>
            <source>Add lane from &amp;preset</source>
            <translation>从预设添加车道(&amp;P)</translation>
        </message>
        <message>
            <source>Order pair: transformers vs llama.cpp</source>
            <translation>顺序对照：transformers 与 llama.cpp</translation>
        </message>
        <message>
            <source>Two lanes with the same settings and seed, one in transformers' order (temperature first), one in llama.cpp's (temperature last)</source>
            <translation>设置和种子相同的两条车道：一条用 transformers 的顺序（温度在前），一条用 llama.cpp 的顺序（温度在后）</translation>
        </message>
        <message>
            <source>&amp;Replace selected lane with preset</source>
            <translation>用预设替换所选车道(&amp;R)</translation>
        </message>
    </context>
    <context>
        <name>lens_view</name>
        <message>
            <source>The position whose next token the lens reads; selecting a step in the text picks the position before it (where that token was predicted)</source>
            <translation>透镜读取其下一个词元的位置；在文本中选中某一步即选中它之前的位置（即预测出该词元的位置）</translation>
        </message>
        <message>
            <source>what follows</source>
            <translation>后续内容</translation>
        </message>
        <message>
            <source>each row: the prediction from that layer's output (final norm and lm_head), best first; colour: probability · &lt;span style="color:{FINAL_COLOUR}"&gt;□&lt;/span&gt; the model's final choice · &lt;span style="color:{ACTUAL_COLOUR}"&gt;□&lt;/span&gt; the token that followed, when another</source>
            <translation>每一行：由该层输出（经最终归一化和 lm_head）得到的预测，按概率从高到低；颜色：概率 · &lt;span style="color:{FINAL_COLOUR}"&gt;□&lt;/span&gt; 模型的最终选择 · &lt;span style="color:{ACTUAL_COLOUR}"&gt;□&lt;/span&gt; 实际跟随的词元（若不同）</translation>
        </message>
        <message>
            <source>rank</source>
            <translation>名次</translation>
        </message>
        <message>
            <source>p(final choice)</source>
            <translation>p(最终选择)</translation>
        </message>
        <message>
            <source>{lane} is not explained yet: explaining runs its tokens through the model's inspection model once (prepared the first time).</source>
            <translation>{lane} 尚未解释：解释会用模型的检查模型把它的词元跑一遍（首次使用时会先准备检查模型）。</translation>
        </message>
        <message>
            <source>Run the lanes, then explain one: what every layer would predict next.</source>
            <translation>先运行各车道，再解释其中一条：查看每一层会预测的下一个词元。</translation>
        </message>
        <message>
            <source>the token's journey after “{token}”@{position}: what each layer would predict · lane {lane}</source>
            <translation>“{token}”@{position} 之后的词元历程：每层会预测什么 · 车道 {lane}</translation>
        </message>
        <message>
            <source>{lane}: what each layer would predict after {token}</source>
            <translation>{lane}：每层在 {token} 之后会预测什么</translation>
        </message>
        <message>
            <source>top-1 only at the last layer ({layer}: the model's own output)</source>
            <translation>仅在最后一层（{layer}：模型自身的输出）排第一</translation>
        </message>
        <message>
            <source>, after being top-1 {where} for a while</source>
            <translation>，此前曾在{where}短暂排第一</translation>
        </message>
        <message>
            <source>top-1 {where} and from there on</source>
            <translation>{where}起排第一并保持</translation>
        </message>
        <message>
            <source>top-1 first {first}, for good {settled}</source>
            <translation>{first}首次排第一，{settled}起稳定排第一</translation>
        </message>
        <message>
            <source>&lt;b&gt;“{token}”&lt;/b&gt; is the model's choice (p {prob}): {top1}; first among the 10 best {where}.</source>
            <translation>&lt;b&gt;“{token}”&lt;/b&gt;是模型的选择（p {prob}）：{top1}；{where}首次进入前 10。</translation>
        </message>
        <message>
            <source>The lane took “{token}” here instead (it samples or was steered).</source>
            <translation>该车道在此处实际取了“{token}”（它在采样或被引导）。</translation>
        </message>
        <message>
            <source>at the embeddings already</source>
            <translation>在嵌入层就已经</translation>
        </message>
        <message>
            <source>after layer {layer}</source>
            <translation>在第 {layer} 层之后</translation>
        </message>
    </context>
    <context>
        <name>main_window</name>
        <message>
            <source>Branchpoint</source>
            <translation>Branchpoint</translation>
        </message>
        <message>
            <source>Branchpoint — {name}</source>
            <translation>Branchpoint — {name}</translation>
        </message>
        <message>
            <source>Could not export images to {folder}: {error}. The run is still here.</source>
            <translation>无法将图像导出到 {folder}：{error}。运行仍在这里。</translation>
        </message>
        <message>
            <source>quit</source>
            <translation>退出</translation>
        </message>
        <message>
            <source> Model </source>
            <translation> 模型 </translation>
        </message>
        <message>
            <source> Branch as </source>
            <translation> 分支策略 </translation>
        </message>
    </context>
    <context>
        <name>model_choice</name>
        <message>
            <source>Read “{lane}”'s tokens (made by {model}) with:</source>
            <translation>用以下模型读取“{lane}”的词元（由 {model} 生成）：</translation>
        </message>
        <message>
            <source>Compare with model</source>
            <translation>与模型比较</translation>
        </message>
    </context>
    <context>
        <name>model_compare_rows</name>
        <message>
            <source>no per-layer states (the graph's layers are not named as optimum's export names them)</source>
            <translation>没有逐层状态（计算图的层不是按 optimum 导出的方式命名的）</translation>
        </message>
        <message>
            <source>hidden state vs A, by layer: relative error {first:.2g} % at layer 1 → {last:.2g} % at layer {count} · lowest cosine {cosine:.6f} (layer {worst})</source>
            <translation>隐藏状态与 A 逐层对比：相对误差第 1 层 {first:.2g} % → 第 {count} 层 {last:.2g} % · 最低余弦 {cosine:.6f}（第 {worst} 层）</translation>
        </message>
        <message>
            <source>no top-1 flip in {count} steps (A's median top-two margin {median:.2f})</source>
            <translation>{count} 步中没有第一名翻转（A 前两名差距的中位数 {median:.2f}）</translation>
        </message>
        <message>
            <source>{flips} top-1 flips in {count} steps, where A's top two were {at} apart (the median margin over all steps: {median:.2f})</source>
            <translation>{count} 步中有 {flips} 次第一名翻转，翻转处 A 的前两名相差 {at}（所有步差距的中位数：{median:.2f}）</translation>
        </message>
    </context>
    <context>
        <name>model_compare_view</name>
        <message>
            <source>“{lane}”: {a} → {b}, teacher-forced on the lane's {count} tokens</source>
            <translation>“{lane}”：{a} → {b}，在该车道的 {count} 个词元上教师强制</translation>
        </message>
        <message>
            <source> — stale: the lane changed since (compare again)</source>
            <translation> —— 已过时：车道此后有改动（请重新比较）</translation>
        </message>
        <message>
            <source>mean KL {mean} · max KL {max} (step {max_step}) · top-1 agreement {agreement} · mean |Δp(chosen)| {delta}</source>
            <translation>平均 KL {mean} · 最大 KL {max}（第 {max_step} 步）· 首选一致率 {agreement} · 平均 |Δp(所选)| {delta}</translation>
        </message>
        <message>
            <source>free-running greedy texts not computed</source>
            <translation>未计算自由贪心续写文本</translation>
        </message>
        <message>
            <source>free-running greedy texts never part ({count} tokens)</source>
            <translation>自由贪心续写文本始终一致（{count} 个词元）</translation>
        </message>
        <message>
            <source>free-running greedy texts part at step {step}</source>
            <translation>自由贪心续写文本在第 {step} 步分开</translation>
        </message>
        <message>
            <source>step {step}: “{token}” p {pa} under A, {pb} under B (Δ {delta:+.4f}) · KL {kl}</source>
            <translation>第 {step} 步：“{token}” 在 A 下 p {pa}，在 B 下 {pb}（Δ {delta:+.4f}）· KL {kl}</translation>
        </message>
        <message>
            <source>same top-1</source>
            <translation>首选相同</translation>
        </message>
        <message>
            <source>top-1 flips: A “{a}”, B “{b}”</source>
            <translation>首选翻转：A “{a}”，B “{b}”</translation>
        </message>
        <message>
            <source>Compare with model…</source>
            <translation>与模型比较…</translation>
        </message>
        <message>
            <source>Read the selected lane's tokens with a second prepared model (a precision variant, say) and compare step by step</source>
            <translation>用第二个已准备的模型（例如一个精度变体）读取所选车道的词元，并逐步比较</translation>
        </message>
        <message>
            <source>KL(A‖B), nats</source>
            <translation>KL(A‖B)，奈特</translation>
        </message>
        <message>
            <source>probability</source>
            <translation>概率</translation>
        </message>
        <message>
            <source>‖h_B − h_A‖ / ‖h_A‖, %</source>
            <translation>‖h_B − h_A‖ / ‖h_A‖，%</translation>
        </message>
        <message>
            <source>layer</source>
            <translation>层</translation>
        </message>
        <message>
            <source>&lt;span style="color:{KL}"&gt;■&lt;/span&gt;&amp;nbsp;KL(A‖B) at the step &amp;nbsp; &lt;span style="color:{FLIP}"&gt;■&lt;/span&gt;&amp;nbsp;↯ top-1 flips (A's → B's) &amp;nbsp; &lt;span style="color:{CHOSEN}"&gt;■&lt;/span&gt;&amp;nbsp;the lane's token &amp;nbsp; &lt;span style="color:{OTHER}"&gt;■&lt;/span&gt;&amp;nbsp;the other model's top-1 at a flip</source>
            <translation>&lt;span style="color:{KL}"&gt;■&lt;/span&gt;&amp;nbsp;该步的 KL(A‖B) &amp;nbsp; &lt;span style="color:{FLIP}"&gt;■&lt;/span&gt;&amp;nbsp;↯ 首选翻转（A 的 → B 的） &amp;nbsp; &lt;span style="color:{CHOSEN}"&gt;■&lt;/span&gt;&amp;nbsp;车道的词元 &amp;nbsp; &lt;span style="color:{OTHER}"&gt;■&lt;/span&gt;&amp;nbsp;翻转处另一个模型的首选</translation>
        </message>
        <message>
            <source>{side}: {model} · step {step}</source>
            <translation>{side}：{model} · 第 {step} 步</translation>
        </message>
        <message>
            <source>No model comparison yet: select a token of a lane, then Compare with model… (Lanes menu, the token's menu, or the button here) to read the lane's tokens with a second model and see where the two differ.</source>
            <translation>还没有模型比较：先选中某条车道的一个词元，再选择“与模型比较…”（“车道”菜单、词元的右键菜单或此处的按钮），用第二个模型读取该车道的词元，看两者在哪里不同。</translation>
        </message>
    </context>
    <context>
        <name>model_offers</name>
        <message>
            <source>English</source>
            <translation>英文</translation>
        </message>
        <message>
            <source>Chinese</source>
            <translation>中文</translation>
        </message>
        <message>
            <source>multilingual</source>
            <translation>多语言</translation>
        </message>
        <message>
            <source>, </source>
            <translation>、</translation>
        </message>
        <message>
            <source>Hugging Face hub {id} (needs network)</source>
            <translation>Hugging Face Hub {id}（需要网络）</translation>
        </message>
        <message>
            <source>PyPI {package}</source>
            <translation>PyPI {package}</translation>
        </message>
        <message>
            <source>{size} from the hub</source>
            <translation>从 Hub 下载 {size}</translation>
        </message>
        <message>
            <source>{size} from PyPI</source>
            <translation>从 PyPI 下载 {size}</translation>
        </message>
        <message>
            <source>prepared</source>
            <translation>已准备</translation>
        </message>
        <message>
            <source> (to accept before preparing)</source>
            <translation>（准备前需接受）</translation>
        </message>
        <message>
            <source>{description}
Parameters: {parameters} · writes: {languages}
Licence: {licence}
Source: {source}, {size} to download</source>
            <translation>{description}
参数：{parameters} · 书写语言：{languages}
许可：{licence}
来源：{source}，需下载 {size}</translation>
        </message>
        <message>
            <source>{label} · {architecture} {quantization} · {size} · found in {where}</source>
            <translation>{label} · {architecture} {quantization} · {size} · 在 {where} 中找到</translation>
        </message>
        <message>
            <source>{model} writes English only; {other} writes Chinese and is prepared.</source>
            <translation>{model} 只会写英文；{other} 会写中文，且已准备好。</translation>
        </message>
        <message>
            <source>Switch to {other}</source>
            <translation>切换到 {other}</translation>
        </message>
        <message>
            <source>{model} writes English only; {other} writes Chinese ({size} from {source}, prepared once).</source>
            <translation>{model} 只会写英文；{other} 会写中文（从 {source} 下载 {size}，只需准备一次）。</translation>
        </message>
        <message>
            <source>the hub</source>
            <translation>Hub</translation>
        </message>
        <message>
            <source>Prepare {other} and switch</source>
            <translation>准备 {other} 并切换</translation>
        </message>
    </context>
    <context>
        <name>model_picker</name>
        <message>
            <source>The run's model: every lane that names no model of its own runs on it (the lanes editor's model field)</source>
            <translation>运行的模型：未指定自己模型的车道都使用它（见车道编辑器的模型字段）</translation>
        </message>
        <message>
            <source>Add model from Hugging Face…</source>
            <translation>从 Hugging Face 添加模型…</translation>
        </message>
        <message>
            <source>Add GGUF file…</source>
            <translation>添加 GGUF 文件…</translation>
        </message>
        <message>
            <source>Add local folder…</source>
            <translation>添加本地文件夹…</translation>
        </message>
        <message>
            <source>Add precision variant…</source>
            <translation>添加精度变体…</translation>
        </message>
        <message>
            <source>fp16, int8, int4 or q4_1 weights of the chosen model, made offline and checked against fp32</source>
            <translation>所选模型的 fp16、int8、int4 或 q4_1 权重，离线制作并与 fp32 对照检查</translation>
        </message>
        <message>
            <source>Add a server…</source>
            <translation>添加服务器…</translation>
        </message>
        <message>
            <source>A lane on a model served by llama.cpp's server, vLLM or SGLang</source>
            <translation>在 llama.cpp 服务器、vLLM 或 SGLang 提供的模型上运行的车道</translation>
        </message>
        <message>
            <source>Add precision variant</source>
            <translation>添加精度变体</translation>
        </message>
        <message>
            <source>No model is prepared yet: a precision variant is made from a prepared model.</source>
            <translation>尚未准备任何模型：精度变体由已准备的模型制作。</translation>
        </message>
        <message>
            <source>Precision variant {line} prepared; against fp32: {check}.</source>
            <translation>精度变体 {line} 已准备好；与 fp32 对照：{check}。</translation>
        </message>
        <message>
            <source>Model folder (ONNX export or Hugging Face model)</source>
            <translation>模型文件夹（ONNX 导出或 Hugging Face 模型）</translation>
        </message>
        <message>
            <source>Add model</source>
            <translation>添加模型</translation>
        </message>
        <message>
            <source>{folder} holds neither model.onnx nor a Hugging Face config.json.</source>
            <translation>{folder} 中既没有 model.onnx，也没有 Hugging Face 的 config.json。</translation>
        </message>
        <message>
            <source>Registering the ONNX export in {folder}</source>
            <translation>正在登记 {folder} 中的 ONNX 导出</translation>
        </message>
        <message>
            <source>Exporting the Hugging Face model in {folder} to ONNX (this can take a minute)</source>
            <translation>正在把 {folder} 中的 Hugging Face 模型导出为 ONNX（可能需要一分钟）</translation>
        </message>
    </context>
    <context>
        <name>notice_bar</name>
        <message>
            <source>Dismiss</source>
            <translation>关闭</translation>
        </message>
    </context>
    <context>
        <name>parameter_labels</name>
        <message>
            <source>do_sample</source>
            <translation>随机采样</translation>
        </message>
        <message>
            <source>num_beams</source>
            <translation>束数</translation>
        </message>
        <message>
            <source>temperature</source>
            <translation>温度</translation>
        </message>
        <message>
            <source>top_k</source>
            <translation>候选数上限</translation>
        </message>
        <message>
            <source>top_p</source>
            <translation>核采样阈值</translation>
        </message>
        <message>
            <source>min_p</source>
            <translation>最小概率比</translation>
        </message>
        <message>
            <source>typical_p</source>
            <translation>典型采样</translation>
        </message>
        <message>
            <source>repetition_penalty</source>
            <translation>重复惩罚</translation>
        </message>
        <message>
            <source>no_repeat_ngram_size</source>
            <translation>禁止重复片段长度</translation>
        </message>
        <message>
            <source>min_new_tokens</source>
            <translation>最少新词元数</translation>
        </message>
        <message>
            <source>epsilon_cutoff</source>
            <translation>ε 截断</translation>
        </message>
        <message>
            <source>eta_cutoff</source>
            <translation>η 截断</translation>
        </message>
        <message>
            <source>suppress_tokens</source>
            <translation>禁用词元</translation>
        </message>
        <message>
            <source>bad_words_ids</source>
            <translation>禁用序列</translation>
        </message>
        <message>
            <source>sequence_bias</source>
            <translation>序列偏置</translation>
        </message>
        <message>
            <source>frequency_penalty</source>
            <translation>频率惩罚</translation>
        </message>
        <message>
            <source>presence_penalty</source>
            <translation>存在惩罚</translation>
        </message>
        <message>
            <source>penalty_last_n</source>
            <translation>惩罚窗口</translation>
        </message>
        <message>
            <source>dry_multiplier</source>
            <translation>DRY 系数</translation>
        </message>
        <message>
            <source>dry_base</source>
            <translation>DRY 底数</translation>
        </message>
        <message>
            <source>dry_allowed_length</source>
            <translation>DRY 允许长度</translation>
        </message>
        <message>
            <source>dry_penalty_last_n</source>
            <translation>DRY 扫描窗口</translation>
        </message>
        <message>
            <source>dry_sequence_breakers</source>
            <translation>DRY 断开字符串</translation>
        </message>
        <message>
            <source>top_n_sigma</source>
            <translation>标准差截断</translation>
        </message>
        <message>
            <source>xtc_probability</source>
            <translation>XTC 概率</translation>
        </message>
        <message>
            <source>xtc_threshold</source>
            <translation>XTC 阈值</translation>
        </message>
        <message>
            <source>mirostat</source>
            <translation>Mirostat 版本</translation>
        </message>
        <message>
            <source>mirostat_tau</source>
            <translation>Mirostat 目标 τ</translation>
        </message>
        <message>
            <source>mirostat_eta</source>
            <translation>Mirostat 学习率 η</translation>
        </message>
        <message>
            <source>dynatemp_range</source>
            <translation>动态温度范围</translation>
        </message>
        <message>
            <source>dynatemp_exponent</source>
            <translation>动态温度指数</translation>
        </message>
        <message>
            <source>adaptive</source>
            <translation>自适应</translation>
        </message>
        <message>
            <source>max_new_tokens</source>
            <translation>最多新词元数</translation>
        </message>
        <message>
            <source>stop_strings</source>
            <translation>停止字符串</translation>
        </message>
        <message>
            <source>length_penalty</source>
            <translation>长度惩罚</translation>
        </message>
        <message>
            <source>early_stopping</source>
            <translation>提前停止</translation>
        </message>
        <message>
            <source>num_return_sequences</source>
            <translation>返回序列数</translation>
        </message>
        <message>
            <source>seed</source>
            <translation>种子</translation>
        </message>
    </context>
    <context>
        <name>parameters</name>
        <message>
            <source>Draw the next token at random from the processed distribution (seeded, so runs repeat) instead of taking the most likely one; the sampling parameters apply only when it is on.</source>
            <translation>从处理后的分布中随机抽取下一个词元（有种子，因此运行可重现），而不是取最可能的那个；只有开启时采样参数才生效。</translation>
        </message>
        <message>
            <source>Beam search: keep this many partial sequences and extend the best-scoring ones (1 = no beam search; not with do_sample).</source>
            <translation>束搜索：保留这么多条部分序列，并扩展得分最高的那些（1 = 不用束搜索；不能与 do_sample 同用）。</translation>
        </message>
        <message>
            <source>Divide the logits by this before the softmax: below 1 sharpens the distribution, above 1 flattens it.</source>
            <translation>在 softmax 之前把 logits 除以该值：小于 1 使分布更尖锐，大于 1 使分布更平坦。</translation>
        </message>
        <message>
            <source>Keep only the k most likely tokens (all tokens tied with the k-th too).</source>
            <translation>只保留最可能的 k 个词元（与第 k 个并列的词元也保留）。</translation>
        </message>
        <message>
            <source>Nucleus sampling: keep the smallest set of most likely tokens whose probabilities add up to at least top_p.</source>
            <translation>核采样：保留概率之和至少为 top_p 的最小一组最可能词元。</translation>
        </message>
        <message>
            <source>Drop the tokens whose probability is below min_p times the top token's probability.</source>
            <translation>去掉概率低于 min_p 乘以最高词元概率的词元。</translation>
        </message>
        <message>
            <source>Locally typical sampling: keep the tokens whose surprisal is closest to the entropy until their probabilities add up to typical_p.</source>
            <translation>局部典型采样：按惊奇度与熵的接近程度保留词元，直到它们的概率之和达到 typical_p。</translation>
        </message>
        <message>
            <source>Make the tokens already in the prompt or the output less likely: positive logits are divided by it, negative ones multiplied.</source>
            <translation>降低提示词或输出中已出现词元的可能性：正的 logits 除以该值，负的乘以该值。</translation>
        </message>
        <message>
            <source>Forbid any n-gram of this size from appearing twice (prompt included).</source>
            <translation>禁止任何这一长度的 n-gram 出现两次（包括提示词）。</translation>
        </message>
        <message>
            <source>Suppress the end-of-sequence tokens until this many tokens are generated.</source>
            <translation>在生成这么多词元之前屏蔽序列结束词元。</translation>
        </message>
        <message>
            <source>Truncation sampling: drop the tokens whose probability is below epsilon_cutoff.</source>
            <translation>截断采样：去掉概率低于 epsilon_cutoff 的词元。</translation>
        </message>
        <message>
            <source>Eta sampling: drop the tokens whose probability is below min(eta_cutoff, sqrt(eta_cutoff) * exp(-entropy)).</source>
            <translation>Eta 采样：去掉概率低于 min(eta_cutoff, sqrt(eta_cutoff) * exp(-entropy)) 的词元。</translation>
        </message>
        <message>
            <source>Never produce these token ids (their scores become -inf).</source>
            <translation>永不生成这些词元 id（它们的分数变为 -inf）。</translation>
        </message>
        <message>
            <source>Forbid these token sequences: the last token of each is banned where the tokens before it were just produced (a single id is always banned; an eos id alone is not).</source>
            <translation>禁止这些词元序列：在刚生成了某序列前面的词元时，禁止其最后一个词元（单个 id 总是被禁止；单独的 eos id 不会）。</translation>
        </message>
        <message>
            <source>Add a bias to the score of the last token of each sequence where the tokens before it were just produced (a single id: always).</source>
            <translation>在刚生成了某序列前面的词元时，给其最后一个词元的分数加上偏置（单个 id：总是）。</translation>
        </message>
        <message>
            <source>Subtract frequency_penalty times the number of times a token occurs in the penalty window (plus presence_penalty once if it occurs) from its logit.</source>
            <translation>从词元的 logit 中减去 frequency_penalty 乘以它在惩罚窗口中出现的次数（若出现，再减一次 presence_penalty）。</translation>
        </message>
        <message>
            <source>Subtract this from the logit of every token that occurs in the penalty window (with frequency_penalty, in one llama.cpp penalties stage).</source>
            <translation>从惩罚窗口中出现过的每个词元的 logit 中减去此值（与 frequency_penalty 同属 llama.cpp 的一个惩罚阶段）。</translation>
        </message>
        <message>
            <source>The penalty window: the last penalty_last_n ids of prompt and output that repetition_penalty, frequency_penalty and presence_penalty look at (unset: all of them).</source>
            <translation>惩罚窗口：repetition_penalty、frequency_penalty 和 presence_penalty 所看的提示与输出中最后 penalty_last_n 个 id（不设置：全部）。</translation>
        </message>
        <message>
            <source>DRY (don't repeat yourself): penalise a token that would extend a sequence already in the text by dry_multiplier * dry_base^(length - dry_allowed_length).</source>
            <translation>DRY（不要重复自己）：若某词元会延续文本中已出现的序列，则按 dry_multiplier * dry_base^(length - dry_allowed_length) 惩罚它。</translation>
        </message>
        <message>
            <source>DRY: the base of the penalty's exponential growth with the repeated length.</source>
            <translation>DRY：惩罚随重复长度指数增长的底数。</translation>
        </message>
        <message>
            <source>DRY: repeated sequences up to this length are not penalised.</source>
            <translation>DRY：不超过此长度的重复序列不受惩罚。</translation>
        </message>
        <message>
            <source>DRY: how many of the last ids it scans for repeats (-1: all of them, 0: none, which turns DRY off).</source>
            <translation>DRY：检查重复时扫描最后多少个 id（-1：全部；0：不扫描，即关闭 DRY）。</translation>
        </message>
        <message>
            <source>DRY: a repeat does not extend across these strings.</source>
            <translation>DRY：重复不会跨越这些字符串。</translation>
        </message>
        <message>
            <source>Keep the tokens whose logit is within top_n_sigma standard deviations (of the finite logits) of the largest logit.</source>
            <translation>保留 logit 与最大 logit 相差不超过 top_n_sigma 个标准差（按有限 logit 计算）的词元。</translation>
        </message>
        <message>
            <source>XTC (exclude top choices): with this probability per step, drop every token at least as likely as xtc_threshold except the least likely of them.</source>
            <translation>XTC（排除最优选项）：每一步以此概率去掉概率不低于 xtc_threshold 的词元，只留下其中概率最低的一个。</translation>
        </message>
        <message>
            <source>XTC: the probability a top choice must reach to be excluded (above 0.5 XTC does nothing).</source>
            <translation>XTC：最优选项被排除所需达到的概率（高于 0.5 时 XTC 不起作用）。</translation>
        </message>
        <message>
            <source>Mirostat: keep the text's surprise near mirostat_tau by truncating each step with a running threshold mu (1: version 1, 2: version 2; 0: off).</source>
            <translation>Mirostat：每一步用一个动态阈值 mu 截断，使文本的意外度保持在 mirostat_tau 附近（1：第 1 版，2：第 2 版；0：关闭）。</translation>
        </message>
        <message>
            <source>Mirostat: the target surprise in bits (mu starts at twice it).</source>
            <translation>Mirostat：目标意外度，单位为比特（mu 从它的两倍开始）。</translation>
        </message>
        <message>
            <source>Mirostat: the learning rate of mu.</source>
            <translation>Mirostat：mu 的学习率。</translation>
        </message>
        <message>
            <source>Dynamic temperature: a temperature between temperature - dynatemp_range and temperature + dynatemp_range, higher where the distribution's entropy is higher (in place of temperature).</source>
            <translation>动态温度：温度在 temperature - dynatemp_range 与 temperature + dynatemp_range 之间，分布的熵越高温度越高（代替 temperature）。</translation>
        </message>
        <message>
            <source>Dynamic temperature: the exponent applied to the normalised entropy.</source>
            <translation>动态温度：作用于归一化熵的指数。</translation>
        </message>
        <message>
            <source>Adaptive sampling (entropix-style): each step takes the most likely token, samples, or samples wider (higher temperature, top-k) by the raw distribution's entropy and varentropy.</source>
            <translation>自适应采样（entropix 式）：每一步根据原始分布的熵和变熵，选取最可能的词元、采样，或放宽后采样（更高的温度、top-k）。</translation>
        </message>
        <message>
            <source>This lane's own limit on new tokens (unset: the run's max_new_tokens).</source>
            <translation>这条车道自己的新词元上限（未设置：使用本次运行的 max_new_tokens）。</translation>
        </message>
        <message>
            <source>Stop the lane as soon as its text contains one of these strings.</source>
            <translation>车道文本一旦包含其中任一字符串就停止。</translation>
        </message>
        <message>
            <source>Beam search: a finished hypothesis scores sum(logprobs) / length^length_penalty; above 0 favours longer sequences, below 0 shorter ones.</source>
            <translation>束搜索：完成的候选得分为 sum(logprobs) / length^length_penalty；大于 0 偏向更长的序列，小于 0 偏向更短的。</translation>
        </message>
        <message>
            <source>Beam search: true stops when num_beams hypotheses are finished, false when no better one is likely, "never" when no better one can exist.</source>
            <translation>束搜索：true 在完成 num_beams 个候选时停止，false 在不太可能出现更好的候选时停止，"never" 在不可能出现更好的候选时停止。</translation>
        </message>
        <message>
            <source>Beam search: how many finished hypotheses the lane returns (at most num_beams).</source>
            <translation>束搜索：车道返回多少个完成的候选（最多 num_beams 个）。</translation>
        </message>
        <message>
            <source>Seed of this lane's own random generator: the same seed gives the same draws, whatever the other lanes do (unset: derived from the lane name and the run's seed).</source>
            <translation>这条车道自己的随机数生成器的种子：相同的种子给出相同的抽样，与其他车道无关（未设置：由车道名和本次运行的种子推导）。</translation>
        </message>
    </context>
    <context>
        <name>presets</name>
        <message>
            <source>Greedy</source>
            <translation>贪心</translation>
        </message>
        <message>
            <source>Beam 4</source>
            <translation>束搜索 4</translation>
        </message>
        <message>
            <source>Top-k 50</source>
            <translation>Top-k 50</translation>
        </message>
        <message>
            <source>Top-p 0.9</source>
            <translation>Top-p 0.9</translation>
        </message>
        <message>
            <source>Temperature 1.3</source>
            <translation>温度 1.3</translation>
        </message>
        <message>
            <source>Min-p 0.05</source>
            <translation>Min-p 0.05</translation>
        </message>
        <message>
            <source>creative</source>
            <translation>创意</translation>
        </message>
        <message>
            <source>precise</source>
            <translation>精确</translation>
        </message>
    </context>
    <context>
        <name>prompt_panel</name>
        <message>
            <source>Prompt — Ctrl+Enter runs all lanes</source>
            <translation>提示词 — Ctrl+Enter 运行全部车道</translation>
        </message>
        <message>
            <source>The prompt every lane continues (Ctrl+Enter: Run, Esc: Stop)</source>
            <translation>各车道续写的提示词（Ctrl+Enter：运行，Esc：停止）</translation>
        </message>
        <message>
            <source>chat</source>
            <translation>对话</translation>
        </message>
        <message>
            <source>Wrap the prompt in the model's chat template as a user message</source>
            <translation>用模型的对话模板把提示词包装成一条用户消息</translation>
        </message>
        <message>
            <source>system prompt (optional; the template's default if empty)</source>
            <translation>系统提示词（可选；留空则使用模板默认值）</translation>
        </message>
        <message>
            <source>System message for the chat template</source>
            <translation>对话模板的系统消息</translation>
        </message>
        <message>
            <source>max_new_tokens: how many tokens each lane generates at most</source>
            <translation>max_new_tokens：每条车道最多生成的词元数</translation>
        </message>
        <message>
            <source>auto</source>
            <translation>自动</translation>
        </message>
        <message>
            <source>Base seed of the run: sampled lanes whose seed is auto get one derived from it and their name, so the same seed repeats the run. auto = random each run.</source>
            <translation>本次运行的基础种子：种子为“自动”的采样车道会由它和车道名推导出各自的种子，因此相同的种子会重现同一次运行。自动 = 每次运行随机。</translation>
        </message>
        <message>
            <source>Run</source>
            <translation>运行</translation>
        </message>
        <message>
            <source>Run every lane on this prompt (Ctrl+Enter)</source>
            <translation>用这个提示词运行全部车道（Ctrl+Enter）</translation>
        </message>
        <message>
            <source>Stop</source>
            <translation>停止</translation>
        </message>
        <message>
            <source>Stop at the next step, keeping the text so far (Esc)</source>
            <translation>在下一步停止，保留已生成的文本（Esc）</translation>
        </message>
        <message>
            <source>max new tokens</source>
            <translation>最多新词元</translation>
        </message>
        <message>
            <source>seed</source>
            <translation>种子</translation>
        </message>
    </context>
    <context>
        <name>render</name>
        <message>
            <source>byte {first} of {total}</source>
            <translation>共 {total} 字节中的第 {first} 字节</translation>
        </message>
        <message>
            <source>bytes {first}–{last} of {total}</source>
            <translation>共 {total} 字节中的第 {first}–{last} 字节</translation>
        </message>
        <message>
            <source>end of a character</source>
            <translation>一个字符的结尾</translation>
        </message>
        <message>
            <source>{count} of {total} bytes</source>
            <translation>{total} 字节中的 {count} 个</translation>
        </message>
        <message>
            <source>&lt;b&gt;step {step}&lt;/b&gt; · p={p} (raw {raw})</source>
            <translation>&lt;b&gt;第 {step} 步&lt;/b&gt; · p={p}（原始 {raw}）</translation>
        </message>
        <message>
            <source>entropy {entropy} nats · margin {margin} · kept {kept}</source>
            <translation>熵 {entropy} 奈特 · 差值 {margin} · 保留 {kept}</translation>
        </message>
        <message>
            <source>first divergence from the reference lane</source>
            <translation>与参照车道的首次分歧</translation>
        </message>
        <message>
            <source>critical point: a small change would pick another strong token</source>
            <translation>临界点：稍有变化就会选中另一个强候选词元</translation>
        </message>
        <message>
            <source>branch point</source>
            <translation>分支点</translation>
        </message>
        <message>
            <source>forced token</source>
            <translation>强制词元</translation>
        </message>
        <message>
            <source>proposed step, not yet taken</source>
            <translation>建议的一步，尚未采纳</translation>
        </message>
        <message>
            <source>proposed, not yet taken — F8 accepts it, F9 runs the lane on (a beam lane's step is the search's: no candidate can be taken instead)</source>
            <translation>建议的一步，尚未采纳 —— F8 接受，F9 让该车道继续运行（束搜索车道的一步由搜索决定：不能改选其他候选）</translation>
        </message>
        <message>
            <source>proposed, not yet taken — F8 accepts it (F7: every lane's), double-click another candidate in the inspector to take it instead</source>
            <translation>建议的一步，尚未采纳 —— F8 接受（F7：所有车道），在检查器中双击另一个候选词元即可改选它</translation>
        </message>
        <message>
            <source>the same {count} tokens after the swap</source>
            <translation>替换后的 {count} 个词元完全相同</translation>
        </message>
        <message>
            <source>{count} same tokens after the swap, then apart; distance {distance} ({edits} edits)</source>
            <translation>替换后有 {count} 个相同词元，之后分开；距离 {distance}（{edits} 处编辑）</translation>
        </message>
        <message>
            <source>token-aligned</source>
            <translation>按词元对齐</translation>
        </message>
        <message>
            <source>by text: other tokenizer</source>
            <translation>按文本：另一种分词器</translation>
        </message>
        <message>
            <source>{count} tok</source>
            <translation>{count} 词元</translation>
        </message>
        <message>
            <source>none</source>
            <translation>无</translation>
        </message>
        <message>
            <source>step {step}</source>
            <translation>第 {step} 步</translation>
        </message>
        <message>
            <source>{count} tokens ({reason}); mean p(chosen) {p}; mean entropy {entropy} nats; {critical} critical points; first divergence from the reference lane: {where}</source>
            <translation>{count} 个词元（{reason}）；平均 p(所选) {p}；平均熵 {entropy} 奈特；{critical} 个临界点；与参照车道的首次分歧：{where}</translation>
        </message>
        <message>
            <source>running</source>
            <translation>运行中</translation>
        </message>
        <message>
            <source>compared with the reference lane: {how}</source>
            <translation>与参照车道的比较方式：{how}</translation>
        </message>
        <message>
            <source>top {alternatives} of {vocab}</source>
            <translation>前 {alternatives} 个（共 {vocab} 个）</translation>
        </message>
        <message>
            <source>; tail ≤ {tail}</source>
            <translation>；尾部 ≤ {tail}</translation>
        </message>
        <message>
            <source>partial: {note}</source>
            <translation>部分：{note}</translation>
        </message>
        <message>
            <source>partial: the server returned the {note} of each step: the lane's chain ran on them, renormalised; the mean raw entropy of the whole vocabulary lies between {low} and {high} nats</source>
            <translation>部分：服务器每步只返回 {note}：车道的处理链在这些词元上运行（重新归一化）；整个词表的平均原始熵介于 {low} 与 {high} 奈特之间</translation>
        </message>
    </context>
    <context>
        <name>restore</name>
        <message>
            <source>Restore the last run?</source>
            <translation>恢复上次的运行？</translation>
        </message>
        <message>
            <source>Branchpoint stopped unexpectedly while it showed a run. Restore that run (the text generated so far)?</source>
            <translation>Branchpoint 在显示一次运行时意外停止。要恢复该运行（已生成的文本）吗？</translation>
        </message>
        <message>
            <source>Could not restore the autosaved run: {error}</source>
            <translation>无法恢复自动保存的运行：{error}</translation>
        </message>
        <message>
            <source>Restored the run Branchpoint was showing when it stopped ({lanes} lanes, {tokens} tokens).</source>
            <translation>已恢复 Branchpoint 意外停止时显示的运行（{lanes} 条车道，{tokens} 个词元）。</translation>
        </message>
        <message>
            <source>Removed {count} unfinished preparation folder(s) that an interrupted preparation left in the cache: {names}.</source>
            <translation>已删除缓存中被中断的准备过程留下的 {count} 个未完成的文件夹：{names}。</translation>
        </message>
    </context>
    <context>
        <name>server_dialog</name>
        <message>
            <source>Add a served model</source>
            <translation>添加服务器上的模型</translation>
        </message>
        <message>
            <source>PROTOCOL+URL: llamacpp+, vllm+ or sglang+ then the server's address; options after ?: alternatives=N or all (the top-N a step asks for), timeout=seconds, parallel=requests at once, model=name, vocab=N, key_env=the environment variable holding an API key</source>
            <translation>协议+URL：llamacpp+、vllm+ 或 sglang+，后接服务器地址；? 之后的选项：alternatives=N 或 all（每步请求的前 N 个候选），timeout=秒数，parallel=同时发出的请求数，model=模型名，vocab=N，key_env=保存 API 密钥的环境变量名</translation>
        </message>
        <message>
            <source>Test connection</source>
            <translation>测试连接</translation>
        </message>
        <message>
            <source>Address</source>
            <translation>地址</translation>
        </message>
        <message>
            <source>Asking {name}…</source>
            <translation>正在询问 {name}…</translation>
        </message>
        <message>
            <source>No connection: {error}</source>
            <translation>无法连接：{error}</translation>
        </message>
        <message>
            <source>the whole vocabulary: exact</source>
            <translation>整个词表：精确</translation>
        </message>
        <message>
            <source>partial: the rest held {mass:.2%}</source>
            <translation>部分：其余词元占 {mass:.2%}</translation>
        </message>
        <message>
            <source>Model {model} · vocabulary {vocab:,} · {returned:,} alternatives returned ({exact}); best next token {best!r}</source>
            <translation>模型 {model} · 词表 {vocab:,} · 返回 {returned:,} 个候选（{exact}）；最可能的下一个词元 {best!r}</translation>
        </message>
    </context>
    <context>
        <name>session_tree</name>
        <message>
            <source>pruned {count} node(s) from the tree: {names} (right-click the tree: Undo prune)</source>
            <translation>已从树中剪除 {count} 个节点：{names}（在树上右键单击：撤销剪除）</translation>
        </message>
        <message>
            <source>put back {count} node(s): {names}</source>
            <translation>已恢复 {count} 个节点：{names}</translation>
        </message>
        <message>
            <source>Every run and branch of the session</source>
            <translation>本次会话的每次运行和每个分支</translation>
        </message>
        <message>
            <source>click a node: its lane and step · double-click: bring it back as the lanes · right-click: bookmark, note, hide, prune</source>
            <translation>单击节点：选中其车道和步 · 双击：恢复为当前车道 · 右键：书签、备注、隐藏、剪除</translation>
        </message>
        <message>
            <source>step</source>
            <translation>步</translation>
        </message>
        <message>
            <source>“{name}” is not among the lanes: double-click it to bring it back</source>
            <translation>“{name}”不在当前车道中：双击以恢复它</translation>
        </message>
        <message>
            <source>Remove bookmark</source>
            <translation>移除书签</translation>
        </message>
        <message>
            <source>Bookmark</source>
            <translation>书签</translation>
        </message>
        <message>
            <source>Note…</source>
            <translation>备注…</translation>
        </message>
        <message>
            <source>Show subtree</source>
            <translation>显示子树</translation>
        </message>
        <message>
            <source>Hide subtree</source>
            <translation>隐藏子树</translation>
        </message>
        <message>
            <source>Prune “{name}”</source>
            <translation>剪除“{name}”</translation>
        </message>
        <message>
            <source>Prune “{name}” and the {count} node(s) under it</source>
            <translation>剪除“{name}”及其下的 {count} 个节点</translation>
        </message>
        <message>
            <source>Undo prune ({count} node(s))</source>
            <translation>撤销剪除（{count} 个节点）</translation>
        </message>
        <message>
            <source>Bring back as the lanes</source>
            <translation>恢复为当前车道</translation>
        </message>
        <message>
            <source>Note</source>
            <translation>备注</translation>
        </message>
        <message>
            <source>A short note on this node:</source>
            <translation>为此节点写一条简短备注：</translation>
        </message>
    </context>
    <context>
        <name>setup_dialog</name>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>cancelled</source>
            <translation>已取消</translation>
        </message>
        <message>
            <source>failed</source>
            <translation>失败</translation>
        </message>
        <message>
            <source>Close</source>
            <translation>关闭</translation>
        </message>
        <message>
            <source>Retry</source>
            <translation>重试</translation>
        </message>
        <message>
            <source>cancelling: finishing the current stage first ({stage}); nothing of it will be kept…</source>
            <translation>正在取消：先完成当前阶段（{stage}），其结果不会保留…</translation>
        </message>
        <message>
            <source>starting…</source>
            <translation>正在开始…</translation>
        </message>
    </context>
    <context>
        <name>status</name>
        <message>
            <source>reading the prompt: {done} / {total} tokens</source>
            <translation>正在读取提示词：{done} / {total} 个词元</translation>
        </message>
        <message>
            <source>explaining…</source>
            <translation>正在解释…</translation>
        </message>
        <message>
            <source>running…</source>
            <translation>运行中…</translation>
        </message>
        <message>
            <source>comparing models…</source>
            <translation>正在比较模型…</translation>
        </message>
        <message>
            <source>knocking out each earlier token…</source>
            <translation>正在逐个屏蔽更早的词元…</translation>
        </message>
        <message>
            <source>no model</source>
            <translation>无模型</translation>
        </message>
        <message>
            <source>The ONNX Runtime execution provider really active for the model</source>
            <translation>该模型实际使用的 ONNX Runtime 执行提供程序</translation>
        </message>
        <message>
            <source>Steps done of the longest lane's max_new_tokens</source>
            <translation>最长车道已完成的步数 / 其 max_new_tokens</translation>
        </message>
        <message>
            <source>Tokens the run generated per second since its first token: every lane's and fan-out member's (a beam lane's best sequence)</source>
            <translation>自第一个词元起每秒生成的词元数：包括每条车道和每个分叉成员的词元（束搜索车道计最佳序列）</translation>
        </message>
        <message>
            <source>model: {model_name}</source>
            <translation>模型：{model_name}</translation>
        </message>
        <message>
            <source>step 0/{run_limit}</source>
            <translation>步 0/{run_limit}</translation>
        </message>
        <message>
            <source>step {max_steps}/{limit}</source>
            <translation>步 {max_steps}/{limit}</translation>
        </message>
        <message>
            <source>{name} · step {step} (of 0–{last})</source>
            <translation>{name} · 第 {step} 步（共 0–{last}）</translation>
        </message>
    </context>
    <context>
        <name>sweep_view</name>
        <message>
            <source>Sweep this step</source>
            <translation>扫描这一步</translation>
        </message>
        <message>
            <source>The model recomputes this step's logits once; the lane's own processors then run at temperatures 0 to 2</source>
            <translation>模型重新计算一次这一步的 logits；然后在温度 0 到 2 之间运行该车道自己的处理器</translation>
        </message>
        <message>
            <source>Fan-outs over T</source>
            <translation>按温度扇出</translation>
        </message>
        <message>
            <source>Add lanes that run the selected sampled lane as 8 seeds at T 0.3, 0.7, 1.0 and 1.5 (the same seeds): after the next run, diversity against temperature</source>
            <translation>添加车道，把所选采样车道以 8 个种子分别在 T 0.3、0.7、1.0 和 1.5（相同种子）下运行：下次运行后即可看到多样性随温度的变化</translation>
        </message>
        <message>
            <source>this step</source>
            <translation>这一步</translation>
        </message>
        <message>
            <source>diversity</source>
            <translation>多样性</translation>
        </message>
        <message>
            <source>The selected step's sweep, or the run's fan-outs at several temperatures</source>
            <translation>所选步骤的扫描，或本次运行在几种温度下的扇出</translation>
        </message>
        <message>
            <source>p after processors</source>
            <translation>处理器处理后的 p</translation>
        </message>
        <message>
            <source>temperature</source>
            <translation>温度</translation>
        </message>
        <message>
            <source>entropy (nats)</source>
            <translation>熵（奈特）</translation>
        </message>
        <message>
            <source>members · step · tokens</source>
            <translation>成员数 · 步 · 词元</translation>
        </message>
        <message>
            <source>{name} · step {step}: no sweep yet — “Sweep this step” computes it (the model recomputes this step once)</source>
            <translation>{name} · 第 {step} 步：还没有扫描 — 点击“扫描这一步”计算（模型会重新计算一次这一步）</translation>
        </message>
        <message>
            <source>Select a step to see its distribution at other temperatures</source>
            <translation>选择一步，查看它在其他温度下的分布</translation>
        </message>
        <message>
            <source> (the lane's own T {temperature}: dotted)</source>
            <translation>（该车道自身的 T {temperature}：点线）</translation>
        </message>
        <message>
            <source> (greedy / beam: T is not applied)</source>
            <translation>（贪心 / 束搜索：不应用 T）</translation>
        </message>
        <message>
            <source>&lt;b&gt;{name} · step {step}&lt;/b&gt;: the distribution from T 0 (argmax) to 2{where}</source>
            <translation>&lt;b&gt;{name} · 第 {step} 步&lt;/b&gt;：从 T 0（取最大值）到 2 的分布{where}</translation>
        </message>
        <message>
            <source>entropy</source>
            <translation>熵</translation>
        </message>
        <message>
            <source>kept set (right axis)</source>
            <translation>保留集（右轴）</translation>
        </message>
        <message>
            <source>Diversity against temperature: “Fan-outs over T” adds fan-outs of the selected sampled lane at T 0.3, 0.7, 1.0 and 1.5; run them, then look here</source>
            <translation>多样性随温度的变化：“按温度扇出”会为所选采样车道添加 T 0.3、0.7、1.0 和 1.5 的扇出；运行后在这里查看</translation>
        </message>
        <message>
            <source>&lt;b&gt;{len} fan-outs of {members} seeds&lt;/b&gt;: how many distinct texts, how soon the members part, and how many tokens two members' texts differ by, at each temperature</source>
            <translation>&lt;b&gt;{len} 组 {members} 个种子的扇出&lt;/b&gt;：每个温度下有多少种不同文本、成员多早分开，以及两个成员的文本平均相差多少个词元</translation>
        </message>
        <message>
            <source>distinct continuations</source>
            <translation>不同续写数</translation>
        </message>
        <message>
            <source>mean first split step</source>
            <translation>平均首次分开步</translation>
        </message>
        <message>
            <source>mean pairwise edit distance (tokens)</source>
            <translation>平均两两编辑距离（词元）</translation>
        </message>
    </context>
    <context>
        <name>text_view</name>
        <message>
            <source>(draw within {distance:g} of p ≥ {prob:g}; p₂/p₁ ≥ {ratio:g})</source>
            <translation>（抽样值距 p ≥ {prob:g} 的边界在 {distance:g} 以内；p₂/p₁ ≥ {ratio:g}）</translation>
        </message>
        <message>
            <source>space</source>
            <translation>空格</translation>
        </message>
        <message>
            <source>newline</source>
            <translation>换行</translation>
        </message>
        <message>
            <source>p(token)</source>
            <translation>p(词元)</translation>
        </message>
        <message>
            <source>Copy</source>
            <translation>复制</translation>
        </message>
        <message>
            <source>Select all</source>
            <translation>全选</translation>
        </message>
        <message>
            <source>Branch from here with…</source>
            <translation>从这里分支，改选…</translation>
        </message>
        <message>
            <source>Force for all lanes…</source>
            <translation>对全部车道强制…</translation>
        </message>
        <message>
            <source>▲ Replay the branch not taken: “{token}” ({prob})</source>
            <translation>▲ 重放未走的分支：“{token}”（{prob}）</translation>
        </message>
        <message>
            <source>Replay with the runner-up: “{token}” ({prob})</source>
            <translation>用次优词元重放：“{token}”（{prob}）</translation>
        </message>
        <message>
            <source>Why this token and not the runner-up? (Y)</source>
            <translation>为什么是这个词元而不是第二名？(Y)</translation>
        </message>
        <message>
            <source>Explain this lane: attention, logit lens</source>
            <translation>解释这条车道：注意力、logit 透镜</translation>
        </message>
        <message>
            <source>Compare this lane with another model…</source>
            <translation>将此车道与另一个模型比较…</translation>
        </message>
        <message>
            <source>all beams</source>
            <translation>全部束</translation>
        </message>
        <message>
            <source>Show every returned beam hypothesis under the best one</source>
            <translation>在最佳候选下方显示所有返回的束搜索候选</translation>
        </message>
        <message>
            <source>(reference)</source>
            <translation>（参照）</translation>
        </message>
        <message>
            <source>· edited: Run to update</source>
            <translation>· 已编辑：运行后更新</translation>
        </message>
        <message>
            <source>: {count} distinct</source>
            <translation>：{count} 种不同</translation>
        </message>
        <message>
            <source>fan-out ×{members}</source>
            <translation>扇出 ×{members}</translation>
        </message>
        <message>
            <source>all members</source>
            <translation>全部成员</translation>
        </message>
        <message>
            <source>Show every member's text under member #0's</source>
            <translation>在 0 号成员下方显示每个成员的文本</translation>
        </message>
        <message>
            <source>★ forced at step {steps}</source>
            <translation>★ 第 {steps} 步强制</translation>
        </message>
        <message>
            <source>stops after {count} tokens (step mode)</source>
            <translation>{count} 个词元后停止（单步模式）</translation>
        </message>
        <message>
            <source>▲ thresholds…</source>
            <translation>▲ 阈值…</translation>
        </message>
        <message>
            <source>What makes a step a critical point</source>
            <translation>什么样的步骤算作临界点</translation>
        </message>
        <message>
            <source>best running beam…</source>
            <translation>当前最佳束…</translation>
        </message>
        <message>
            <source>running… {count} tok</source>
            <translation>运行中… {count} 词元</translation>
        </message>
        <message>
            <source>{glyph} step {step} proposed</source>
            <translation>{glyph} 第 {step} 步（建议）</translation>
        </message>
        <message>
            <source>vs {lane}: {comparison}</source>
            <translation>对比 {lane}：{comparison}</translation>
        </message>
        <message>
            <source>beam #{rank}</source>
            <translation>第 {rank} 束</translation>
        </message>
        <message>
            <source>score {score}</source>
            <translation>得分 {score}</translation>
        </message>
        <message>
            <source>same as #0</source>
            <translation>与 0 号相同</translation>
        </message>
        <message>
            <source>parts from #0 at step {step}</source>
            <translation>在第 {step} 步与 0 号分开</translation>
        </message>
        <message>
            <source>seed {seed}</source>
            <translation>种子 {seed}</translation>
        </message>
    </context>
    <context>
        <name>timeline</name>
        <message>
            <source>{metric} per step</source>
            <translation>每步的{metric}</translation>
        </message>
        <message>
            <source>auto: strips from {n} lanes</source>
            <translation>自动：{n} 条通道起分条显示</translation>
        </message>
        <message>
            <source>lines overlaid</source>
            <translation>曲线叠加</translation>
        </message>
        <message>
            <source>one strip per lane</source>
            <translation>每条通道一条带</translation>
        </message>
        <message>
            <source>Draw every lane in one plot, or each lane in a strip of its own on the shared step axis</source>
            <translation>所有通道画在同一图中，或每条通道在共用步数轴上各占一条带</translation>
        </message>
        <message>
            <source>click a point to select its step · ←/→ move through steps</source>
            <translation>单击点以选中该步 · ←/→ 逐步移动</translation>
        </message>
        <message>
            <source>all steps</source>
            <translation>全部步骤</translation>
        </message>
        <message>
            <source>Show every step (the mouse wheel zooms the step axis, dragging pans it)</source>
            <translation>显示全部步骤（鼠标滚轮缩放步骤轴，拖动可平移）</translation>
        </message>
        <message>
            <source>Click a lane to hide or show its line</source>
            <translation>单击车道可隐藏或显示其曲线</translation>
        </message>
        <message>
            <source>step</source>
            <translation>步</translation>
        </message>
        <message>
            <source>{metric} 0–{top:.3g}</source>
            <translation>{metric} 0–{top:.3g}</translation>
        </message>
        <message>
            <source>{name} · step {step} · “{token}” · {metric} = {value:.4f}</source>
            <translation>{name} · 第 {step} 步 · “{token}” · {metric} = {value:.4f}</translation>
        </message>
    </context>
    <context>
        <name>token_view</name>
        <message>
            <source>&lt;span style="background:{SPECIAL_BACKGROUND}"&gt;&amp;nbsp;special&amp;nbsp;&lt;/span&gt; a special token (chat template, end of text) · &lt;span style="background:{BYTE_BACKGROUND}"&gt;&amp;nbsp;‹e8 99›&amp;nbsp;&lt;/span&gt; bytes of a character spread over several tokens, the character under its tokens · the number under a token is its id · “·” is a space, “↵” a newline · click a lane's token to select its step</source>
            <translation>&lt;span style="background:{SPECIAL_BACKGROUND}"&gt;&amp;nbsp;特殊&amp;nbsp;&lt;/span&gt; 特殊词元（对话模板、文本结束）· &lt;span style="background:{BYTE_BACKGROUND}"&gt;&amp;nbsp;‹e8 99›&amp;nbsp;&lt;/span&gt; 一个字符被拆到多个词元中的字节，该字符显示在其词元下方 · 词元下方的数字是它的 id · “·”表示空格，“↵”表示换行 · 单击车道中的词元以选中该步</translation>
        </message>
        <message>
            <source>Run or open a run to see its tokens.</source>
            <translation>运行或打开一次运行以查看其词元。</translation>
        </message>
        <message>
            <source>prompt (chat template) · {count} tokens</source>
            <translation>提示词（对话模板）· {count} 个词元</translation>
        </message>
        <message>
            <source>prompt (plain text) · {count} tokens</source>
            <translation>提示词（纯文本）· {count} 个词元</translation>
        </message>
        <message>
            <source>{lane} · {count} tokens</source>
            <translation>{lane} · {count} 个词元</translation>
        </message>
        <message>
            <source>the prompt and every lane as tokens · {model}</source>
            <translation>提示词和各车道的词元 · {model}</translation>
        </message>
        <message>
            <source>the model's context limit: {positions} positions</source>
            <translation>模型的上下文上限：{positions} 个位置</translation>
        </message>
        <message>
            <source>the model's context limit is unknown here (its model is not prepared here)</source>
            <translation>此处无法得知模型的上下文上限（该模型在本机尚未准备）</translation>
        </message>
        <message>
            <source>longest sequence {count} tokens</source>
            <translation>最长序列 {count} 个词元</translation>
        </message>
        <message>
            <source> = {share} of the limit</source>
            <translation>，占上限的 {share}</translation>
        </message>
        <message>
            <source>&lt;b&gt;prompt {count} tokens&lt;/b&gt; ({special} special)</source>
            <translation>&lt;b&gt;提示词 {count} 个词元&lt;/b&gt;（{special} 个特殊词元）</translation>
        </message>
        <message>
            <source>the prompt's pieces need its model or an explanation saved with the run: ids only</source>
            <translation>显示提示词的词元文本需要其模型或随运行保存的解释：此处仅显示 id</translation>
        </message>
        <message>
            <source>{text}: {total} bytes over {count} tokens</source>
            <translation>{text}：{total} 个字节，分布在 {count} 个词元中</translation>
        </message>
    </context>
    <context>
        <name>tour</name>
        <message>
            <source>A near-tie decides the branch</source>
            <translation>一次近乎平局决定了分支</translation>
        </message>
        <message>
            <source>Where ▲ marks a step, two strong candidates were close: a slightly different draw would have taken the runner-up. The lane added after it replays that branch not taken with the same draws everywhere else — see how far the two texts drift apart.</source>
            <translation>▲ 标出的步骤里，两个有力的候选词非常接近：随机数稍有不同，就会选中第二名。紧随其后新增的车道重放了这条没走的分支，其余抽样完全相同——看看两段文字会分开多远。</translation>
        </message>
        <message>
            <source>The same, in Chinese: 虽然 … 但</source>
            <translation>同样的现象，中文：虽然……但</translation>
        </message>
        <message>
            <source>A Chinese prompt is split into byte-level tokens, so one character can take two or three steps; the critical points still mark where a small fluctuation picked the continuation. The lane map shows every step of both lanes at once.</source>
            <translation>中文提示词被切成字节级的词元，一个汉字可能要走两三步；临界点仍然标出了微小波动决定续写方向的地方。车道 × 步骤图一次显示两条车道的每一步。</translation>
        </message>
        <message>
            <source>Thermal noise made visible: fan-outs widen with temperature</source>
            <translation>让热噪声看得见：温度越高，分叉越宽</translation>
        </message>
        <message>
            <source>Each member of a fan-out draws with its own seed: at low temperature they share a long prefix, at high temperature they part almost at once. The chart shows diversity growing with temperature (the Fan-out tab shows each tree).</source>
            <translation>同一组分叉里的每个成员用各自的种子抽样：温度低时它们共享很长的前缀，温度高时几乎立刻分开。图表显示多样性随温度增长（“分叉”标签页显示每一棵树）。</translation>
        </message>
        <message>
            <source>Determinism: temperature 0 and a fixed seed</source>
            <translation>确定性：温度为 0，种子固定</translation>
        </message>
        <message>
            <source>At temperature 0 the prompt alone fixes every token, and a sampled lane with a fixed seed is just as repeatable: running again gives the same text, token for token. If a token ever differs, the tool shows the step — a near-tie that another machine's arithmetic tipped.</source>
            <translation>温度为 0 时，提示词本身就决定了每一个词；种子固定的抽样车道同样可以重复：再运行一次，文字逐词相同。如果哪个词不同，工具会指出那一步——那是一个被另一台机器的运算误差扳倒的近乎平局。</translation>
        </message>
        <message>
            <source>Beam vs greedy: joint optimum, local optimum</source>
            <translation>束搜索与贪心：整体最优与局部最优</translation>
        </message>
        <message>
            <source>Greedy takes the best token at each step; beam search keeps several partial texts and returns the best whole sequence, a joint optimum rather than a local one. Its pull toward likely text often makes it shorter and more generic — compare the lanes' endings.</source>
            <translation>贪心解码每一步都取最好的词；束搜索保留多段候选文本，返回整体得分最高的序列——是整体最优，而不是局部最优。它偏爱高概率的文本，结果往往更短、更平淡——比较几条车道的结尾。</translation>
        </message>
        <message>
            <source>Repetition, and the penalty that breaks it</source>
            <translation>重复，以及打破重复的惩罚</translation>
        </message>
        <message>
            <source>Greedy decoding falls into loops easily: once a phrase has repeated, repeating it again is the most likely choice. A repetition penalty lowers the tokens already used, and no_repeat_ngram_size bans repeated n-grams — both break the loop.</source>
            <translation>贪心解码很容易陷入循环：一个短语重复过一次，再重复一次就成了最可能的选择。重复惩罚压低已经用过的词，no_repeat_ngram_size 禁止重复的 n 元组——两者都能打破循环。</translation>
        </message>
        <message>
            <source>The same settings in two orders: transformers vs llama.cpp</source>
            <translation>同样的设置，两种顺序：transformers 与 llama.cpp</translation>
        </message>
        <message>
            <source>Both lanes set temperature 1.5, top-k 40, top-p 0.9 and min-p 0.05 and draw with the same seed. transformers divides by the temperature first, so top-p and min-p cut a flattened distribution and keep more tokens; llama.cpp cuts first and applies the temperature last. The ◆ marks the step where their texts part: the Step tab shows the lane's chain there stage by stage, the lanes editor its order.</source>
            <translation>两条车道都设置温度 1.5、top-k 40、top-p 0.9 和 min-p 0.05，并用同一个种子抽样。transformers 先除以温度，于是 top-p 和 min-p 截断的是一个被拉平的分布，保留的词元更多；llama.cpp 先截断，最后才应用温度。◆ 标出两段文本分开的那一步：“步骤”标签页逐阶段显示该车道在那里的处理链，车道编辑器显示它的顺序。</translation>
        </message>
        <message>
            <source>Delayed release: “but” looks back at “Although”</source>
            <translation>延迟释放：“but”回看“Although”</translation>
        </message>
        <message>
            <source>Reading “but”, one attention head looks straight back at “Although”, across every word in between: the concession opened at the start is released at the contrast. The heatmap shows that head in every layer (position 0, which soaks up most attention, left out) — pick another head or token.</source>
            <translation>读到“but”时，有一个注意力头越过中间所有的词，直接回看“Although”：开头埋下的让步在转折处得到释放。热图显示这个头在每一层的权重（吸走大部分注意力的第 0 个位置已略去）——也可以换一个头或词元看看。</translation>
        </message>
        <message>
            <source>The same in Chinese: 但 looks back at 虽然</source>
            <translation>中文里也一样：“但”回看“虽然”</translation>
        </message>
        <message>
            <source>Reading 但 (“but”), a head looks back at 虽然 (“although”), even though every character here is two or three byte-level tokens. The Tokens tab shows how the characters are split.</source>
            <translation>读到“但”时，有一个注意力头回看“虽然”，尽管这里每个汉字都被切成两三个字节级词元。“Tokens”标签页显示汉字是怎样被切开的。</translation>
        </message>
        <message>
            <source>The token's journey through the layers</source>
            <translation>一个词元穿过各层的旅程</translation>
        </message>
        <message>
            <source>Each row is what the model would say if it stopped after that layer: the early layers mostly echo the current word, and the final choice reaches the top only late. The red frames follow it up the layers; the line above the table says where it settles.</source>
            <translation>每一行是模型在这一层之后就停下时会说出的词：前面的层大多只是重复当前的词，最终的选择很晚才升到第一。红框沿着各层跟踪它，表格上方的说明指出它在哪一层定下来。</translation>
        </message>
        <message>
            <source>Which words pushed “ but”?</source>
            <translation>哪些词推动了“ but”？</translation>
        </message>
        <message>
            <source>The model writes “ but” after “Although …,” (the 虽然 … 但 pattern, wrong in English). The Why tab hides each earlier word from every later one in turn and shows how much that moves “ but” against the runner-up: blue words pushed toward “ but”, orange ones away. “Although” is also the first token, where attention parks (the sink), so hiding it moves more than its meaning. The Attention tab shows where the same step looks. The next stop asks the same of 虽然 → 但.</source>
            <translation>模型在“Although …,”之后写出“ but”（即“虽然……但”的句式，在英语里是错的）。“为什么”标签页依次把每个更早的词对其后所有词隐藏，显示这使“ but”相对第二名移动多少：蓝色的词推向“ but”，橙色的词推离它。“Although”也是第一个词元，注意力停靠在那里（注意力汇），所以隐藏它移动的不只是它的词义。“注意力”标签页显示同一步看向哪里。下一站对“虽然 → 但”问同样的问题。</translation>
        </message>
        <message>
            <source>The same in Chinese: did 虽然 push 但是?</source>
            <translation>中文里也一样：是“虽然”推动了“但是”吗？</translation>
        </message>
        <message>
            <source>After 我虽然很累， (“Although I was tired,”) the model writes 但是 (“but”). The Why tab sets 但是 against 我 (“I”), what it would write if it never saw 虽然: hiding 虽然 from the later words takes 但是 from most likely to nearly nothing — the concession stored at 虽然 is what calls for the contrast. The Attention tab shows where this step looks.</source>
            <translation>在“我虽然很累，”之后，模型写出“但是”。“为什么”标签页把“但是”与“我”相比——“我”是它从没看到“虽然”时会写的词：把“虽然”对后面的词隐藏，“但是”就从最可能变得几乎不可能——存在“虽然”里的让步正是呼唤转折的原因。“注意力”标签页显示这一步看向哪里。</translation>
        </message>
        <message>
            <source>今天天气不错，适合去 …: many good next words</source>
            <translation>今天天气不错，适合去……：许多好的下一个词</translation>
        </message>
        <message>
            <source>“Nice weather today, just right for going to …”: no single word is the answer. The Step tab shows the first step's whole distribution — 逛 (stroll), 玩 (play), 海 (the sea), 户外 (outdoors), 游泳 (swimming) … each a few percent. Greedy always takes the first; each sampled lane drew its own, and the rest of its text follows that choice.</source>
            <translation>“今天天气不错，适合去……”：没有唯一的答案。“步骤”标签页显示第一步的完整分布——逛、玩、海、户外、游泳……每个只有百分之几。贪心总是取第一个；每个采样车道各自抽到一个，后面的文字都顺着这个选择走下去。</translation>
        </message>
        <message>
            <source>Quantization noise flips near-ties</source>
            <translation>量化噪声翻转近乎平局的选择</translation>
        </message>
        <message>
            <source>Both lanes decode greedily; the second one on Q8_0 weights (llama.cpp's 8-bit blocks). Quantization shifts every logit a little — the bars are the KL between the two models along the first lane's text. The summary counts the top-1 flips against the first lane's top-two margin: they happen only where its top two candidates are nearly tied (the Step tab shows them there); a shift smaller than the margin changes nothing, one larger swaps the winner, and the rest of the text follows the new branch.</source>
            <translation>两条车道都用贪心解码；第二条使用 Q8_0 权重（llama.cpp 的 8 位分块）。量化会让每个 logit 稍有偏移——柱状图是两个模型沿第一条车道文本的 KL。摘要把第一名翻转与第一条车道前两名的差距对照计数：翻转只发生在前两个候选几乎打平的地方（“步骤”标签页显示它们）；小于差距的偏移不改变任何东西，大于差距的偏移会换掉胜者，之后的文本沿新的分支继续。</translation>
        </message>
    </context>
    <context>
        <name>tour_dialog</name>
        <message>
            <source>Tour — 导览</source>
            <translation>导览 — Tour</translation>
        </message>
        <message>
            <source>Next ▸</source>
            <translation>下一站 ▸</translation>
        </message>
        <message>
            <source>Open the stop after the selected one</source>
            <translation>打开所选站点之后的一站</translation>
        </message>
        <message>
            <source> (chat)</source>
            <translation>（对话）</translation>
        </message>
        <message>
            <source>&lt;h3&gt;{title}&lt;/h3&gt;&lt;p&gt;&lt;b&gt;Prompt&lt;/b&gt; “{prompt}”{chat} · &lt;b&gt;lanes&lt;/b&gt; {lanes}&lt;/p&gt;&lt;p&gt;{text}&lt;/p&gt;</source>
            <translation>&lt;h3&gt;{title}&lt;/h3&gt;&lt;p&gt;&lt;b&gt;提示词&lt;/b&gt;“{prompt}”{chat} · &lt;b&gt;车道&lt;/b&gt; {lanes}&lt;/p&gt;&lt;p&gt;{text}&lt;/p&gt;</translation>
        </message>
    </context>
    <context>
        <name>variant_dialog</name>
        <message>
            <source>Add precision variant</source>
            <translation>添加精度变体</translation>
        </message>
        <message>
            <source>Prepare</source>
            <translation>准备</translation>
        </message>
        <message>
            <source>Close</source>
            <translation>关闭</translation>
        </message>
        <message>
            <source>Precision variants of {name}, made offline from its prepared weights into model folders of their own; each is checked against fp32 (greedy tokens and KL) before it is installed.</source>
            <translation>{name} 的精度变体：由其已准备的权重离线制作，各自存入独立的模型文件夹；安装前都会与 fp32 对照检查（贪心词元和 KL）。</translation>
        </message>
        <message>
            <source>preparing {name}…</source>
            <translation>正在准备 {name}…</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>done</source>
            <translation>完成</translation>
        </message>
        <message>
            <source>{name} is prepared: {check}. Pick it in the model picker, or name it in a lane's model field.</source>
            <translation>{name} 已准备好：{check}。可在模型选择器中选择它，或在车道的模型字段中指定它。</translation>
        </message>
        <message>
            <source>Cancelled: {name} was not made, and nothing of it was left on disk.</source>
            <translation>已取消：未制作 {name}，磁盘上没有留下任何残余。</translation>
        </message>
        <message>
            <source>{name} could not be made, and nothing of it was left on disk: {error}</source>
            <translation>无法制作 {name}，磁盘上没有留下任何残余：{error}</translation>
        </message>
        <message>
            <source>cancelled</source>
            <translation>已取消</translation>
        </message>
        <message>
            <source>failed</source>
            <translation>失败</translation>
        </message>
    </context>
    <context>
        <name>variant_rows</name>
        <message>
            <source>Weights stored as float16, computed in float32: near-exact (KL vs fp32 about 1e-6)</source>
            <translation>权重以 float16 存储、以 float32 计算：几乎精确（与 fp32 的 KL 约 1e-6）</translation>
        </message>
        <message>
            <source>8-bit weights, ONNX Runtime's dynamic quantization (activations quantized per call): approximate</source>
            <translation>8 位权重，ONNX Runtime 的动态量化（每次调用都量化激活值）：近似</translation>
        </message>
        <message>
            <source>4-bit weights re-quantized by ONNX Runtime in blocks of 32: the smallest, approximate</source>
            <translation>4 位权重，由 ONNX Runtime 以 32 个一块重新量化：最小，近似</translation>
        </message>
        <message>
            <source>The GGUF's own 4-bit blocks run as they are: exact (the same distributions as fp32)</source>
            <translation>直接运行 GGUF 自带的 4 位块：精确（与 fp32 的分布相同）</translation>
        </message>
        <message>
            <source>llama.cpp's Q8_0: 8-bit blocks of 32, weight-only (activations fp32): close to fp32</source>
            <translation>llama.cpp 的 Q8_0：每 32 个一块的 8 位权重，仅量化权重（激活值为 fp32）：接近 fp32</translation>
        </message>
        <message>
            <source>llama.cpp's Q4_0 with an 8-bit head: re-quantizes weights that were 4-bit already (the GGUF's Q4_1), approximate</source>
            <translation>llama.cpp 的 Q4_0，输出层为 8 位：把本来已是 4 位的权重（GGUF 的 Q4_1）再量化一次，近似</translation>
        </message>
        <message>
            <source>llama.cpp's Q4_1 quantizer with an 8-bit head: re-quantizes weights that were 4-bit already (mostly onto their own grid)</source>
            <translation>llama.cpp 的 Q4_1 量化器，输出层为 8 位：把本来已是 4 位的权重再量化一次（大多落回原来的网格）</translation>
        </message>
        <message>
            <source>The GGUF's own blocks of every type (Q4_K, Q5_0, Q6_K, Q8_0, Q4_1) run as they are: exact (the same distributions as fp32)</source>
            <translation>直接运行 GGUF 自带的各类块（Q4_K、Q5_0、Q6_K、Q8_0、Q4_1）：精确（与 fp32 的分布相同）</translation>
        </message>
        <message>
            <source>The GGUF's own blocks, lm_head included, with activations rounded to 8 bits as llama.cpp rounds them: the fastest; it flips near-ties as often as llama.cpp does, not always the same ones</source>
            <translation>GGUF 自带的块（含 lm_head），激活值像 llama.cpp 那样取整为 8 位：最快；它在近乎平局处翻转的频率与 llama.cpp 相当，但翻转的位置不一定相同</translation>
        </message>
        <message>
            <source>{size} inspection</source>
            <translation>检查模型 {size}</translation>
        </message>
        <message>
            <source>KL {mean:.2g} · same top {top:.1f} %</source>
            <translation>KL {mean:.2g} · 第一名相同 {top:.1f} %</translation>
        </message>
        <message>
            <source>{name} is not a complete prepared model (no valid manifest.json): variants are made from a model prepared into the cache.</source>
            <translation>{name} 不是完整的已准备模型（没有有效的 manifest.json）：变体只能由已准备到缓存中的模型制作。</translation>
        </message>
        <message>
            <source>{name} is itself a precision variant and its fp32 model is not prepared.</source>
            <translation>{name} 本身就是精度变体，而它的 fp32 模型尚未准备。</translation>
        </message>
        <message>
            <source>{name} has {precision} weights: precision variants are made from a model's fp32 weights.</source>
            <translation>{name} 的权重是 {precision}：精度变体只能由模型的 fp32 权重制作。</translation>
        </message>
        <message>
            <source>Not for {name}: it was not prepared from a GGUF, and {variant} runs a GGUF's own blocks (the default model and gemma-3-270m have one).</source>
            <translation>不适用于 {name}：它不是由 GGUF 准备的，而 {variant} 运行的是 GGUF 自带的块（默认模型和 gemma-3-270m 都有 GGUF）。</translation>
        </message>
        <message>
            <source>Not for {name}: its GGUF is missing from its folder (prepare the model again).</source>
            <translation>不适用于 {name}：其文件夹中缺少 GGUF（请重新准备该模型）。</translation>
        </message>
        <message>
            <source>Not for {name}: {variant} runs {blocks} blocks and its GGUF has none ({types}).</source>
            <translation>不适用于 {name}：{variant} 运行的是 {blocks} 块，而它的 GGUF 没有这种块（{types}）。</translation>
        </message>
        <message>
            <source>greedy: the first {same} of {count} tokens as fp32's · teacher-forced over {positions} tokens: KL vs fp32 {mean:.2g} (99th percentile {p99:.2g}) · same top {top:.1f} %</source>
            <translation>贪心：前 {same}/{count} 个词元与 fp32 相同 · 在 {positions} 个词元上教师强制：与 fp32 的 KL {mean:.2g}（第 99 百分位 {p99:.2g}）· 第一名相同 {top:.1f} %</translation>
        </message>
        <message>
            <source> · a step {ratio:.2f}x fp32's time (measured when prepared)</source>
            <translation> · 每步为 fp32 的 {ratio:.2f} 倍时间（准备时测得）</translation>
        </message>
        <message>
            <source>greedy: the first {same} of {count} tokens as fp32's · top-1 agrees on {agree} of {prompts} prompts · KL vs fp32 {mean:.2g} (max {max:.2g})</source>
            <translation>贪心：{count} 个词元中前 {same} 个与 fp32 相同 · {prompts} 个提示中 {agree} 个首选一致 · 与 fp32 的 KL {mean:.2g}（最大 {max:.2g}）</translation>
        </message>
        <message>
            <source>prepared · {size} on disk · {check}</source>
            <translation>已准备 · 占用磁盘 {size} · {check}</translation>
        </message>
        <message>
            <source>about {size} on disk · a step about {ratio:.2f}x fp32's time</source>
            <translation>约占磁盘 {size} · 每步约为 fp32 的 {ratio:.2f} 倍时间</translation>
        </message>
        <message>
            <source> · made from an earlier preparation of its model: made again</source>
            <translation> · 由其模型较早的一次准备制作：将重新制作</translation>
        </message>
    </context>
    <context>
        <name>views</name>
        <message>
            <source>Step</source>
            <translation>步骤</translation>
        </message>
        <message>
            <source>Attention</source>
            <translation>注意力</translation>
        </message>
        <message>
            <source>Logit lens</source>
            <translation>Logit 透镜</translation>
        </message>
        <message>
            <source>Tokens</source>
            <translation>词元</translation>
        </message>
        <message>
            <source>Why</source>
            <translation>为什么</translation>
        </message>
        <message>
            <source>Timeline</source>
            <translation>时间线</translation>
        </message>
        <message>
            <source>Lane map</source>
            <translation>车道图</translation>
        </message>
        <message>
            <source>Session tree</source>
            <translation>会话树</translation>
        </message>
        <message>
            <source>Side by side</source>
            <translation>并排比较</translation>
        </message>
        <message>
            <source>Fan-out</source>
            <translation>扇出</translation>
        </message>
        <message>
            <source>Temperature</source>
            <translation>温度</translation>
        </message>
        <message>
            <source>Beam tree</source>
            <translation>束搜索树</translation>
        </message>
        <message>
            <source>Entropy × varentropy</source>
            <translation>熵 × 变熵</translation>
        </message>
        <message>
            <source>Model comparison</source>
            <translation>模型比较</translation>
        </message>
    </context>
    <context>
        <name>why</name>
        <message>
            <source>the last token: read directly, not through attention (no knock-out)</source>
            <translation>最后一个词元：直接读取，不经过注意力（无屏蔽）</translation>
        </message>
        <message>
            <source>position {pos}: push {push:+.3f} · Δp(A) {da:+.3f} · Δp(B) {db:+.3f}</source>
            <translation>位置 {pos}：推力 {push:+.3f} · Δp(A) {da:+.3f} · Δp(B) {db:+.3f}</translation>
        </message>
        <message>
            <source>toward B “{b}”</source>
            <translation>推向 B“{b}”</translation>
        </message>
        <message>
            <source>toward A “{a}”</source>
            <translation>推向 A“{a}”</translation>
        </message>
        <message>
            <source>push</source>
            <translation>推力</translation>
        </message>
        <message>
            <source>none</source>
            <translation>无</translation>
        </message>
        <message>
            <source>pushed toward A “{token}”</source>
            <translation>推向 A“{token}”</translation>
        </message>
        <message>
            <source>pushed toward B “{token}”</source>
            <translation>推向 B“{token}”</translation>
        </message>
        <message>
            <source>words and spans hidden together: </source>
            <translation>整体隐藏的词和片段：</translation>
        </message>
        <message>
            <source>Why “{a}” ({pa:.3f}), not “{b}” ({pb:.3f})? lane {lane}, step {step}: logit(A) − logit(B) = {gap:+.3f}</source>
            <translation>为什么是“{a}”（{pa:.3f}）而不是“{b}”（{pb:.3f}）？车道 {lane}，第 {step} 步：logit(A) − logit(B) = {gap:+.3f}</translation>
        </message>
        <message>
            <source>A token's push: how much logit(A) − logit(B) falls when it is hidden from every later token (its key masked for all later queries; positions unchanged). Exact forward passes, {count} rows in {seconds:.1f} s.</source>
            <translation>一个词元的推力：把它对其后所有词元隐藏时（它的键对之后所有查询屏蔽；位置不变），logit(A) − logit(B) 下降多少。精确的前向计算，{count} 行，用时 {seconds:.1f} 秒。</translation>
        </message>
        <message>
            <source>Position 0 is also the attention sink: hiding it moves more than its word.</source>
            <translation>位置 0 也是注意力汇：隐藏它移动的不只是它的词义。</translation>
        </message>
        <message>
            <source>attn</source>
            <translation>注意力</translation>
        </message>
        <message>
            <source>MLP</source>
            <translation>MLP</translation>
        </message>
        <message>
            <source>emb</source>
            <translation>嵌入</translation>
        </message>
        <message>
            <source>where in depth (direct logit attribution; the final norm's scale held at its value, so only each part's direct path counts): embedding {emb:+.2f} + attention {attn:+.2f} + MLP {mlp:+.2f} + rest {rest:+.1e} = {gap:+.3f}</source>
            <translation>在哪一层形成（直接 logit 归因；最终归一化的缩放固定为其实际值，所以只计每一部分的直接路径）：嵌入 {emb:+.2f} + 注意力 {attn:+.2f} + MLP {mlp:+.2f} + 余项 {rest:+.1e} = {gap:+.3f}</translation>
        </message>
        <message>
            <source>stopped: nothing of the knock-out was kept</source>
            <translation>已停止：屏蔽计算的结果没有保留</translation>
        </message>
        <message>
            <source>why “{a}”, not “{b}”: {count} positions knocked out in {seconds:.1f} s; see the Why tab</source>
            <translation>为什么是“{a}”而不是“{b}”：{seconds:.1f} 秒内屏蔽了 {count} 个位置；见“为什么”标签页</translation>
        </message>
        <message>
            <source>“Why A, not B” needs a step of a finished run: run or open one, then pick a step.</source>
            <translation>“为什么是 A 而不是 B”需要一次已完成运行中的一步：先运行或打开一次运行，再选一步。</translation>
        </message>
        <message>
            <source>“{name}” ran on {model}: “Why” reads the run's model only.</source>
            <translation>“{name}”在 {model} 上运行：“为什么”只读取本次运行的模型。</translation>
        </message>
        <message>
            <source>“{name}” runs as a fan-out: ask “Why” of a lane without one.</source>
            <translation>“{name}”以扇出方式运行：请对没有扇出的车道询问“为什么”。</translation>
        </message>
        <message>
            <source>Step {step} is beyond “{name}” (allowed 0 to {last}).</source>
            <translation>第 {step} 步超出了“{name}”（允许 0 到 {last}）。</translation>
        </message>
        <message>
            <source>A and B are the same token: pick another candidate to compare with.</source>
            <translation>A 和 B 是同一个词元：请选另一个候选来比较。</translation>
        </message>
        <message>
            <source>“Why” needs the model “{name}” was made with: choose it in the Model list.</source>
            <translation>“为什么”需要生成“{name}”的模型：请在模型列表中选择它。</translation>
        </message>
        <message>
            <source>Why this token? (Y)</source>
            <translation>为什么是这个词元？(Y)</translation>
        </message>
        <message>
            <source>For the selected step: every earlier token hidden from every later one, in turn; its token against the runner-up</source>
            <translation>对所选的一步：依次把每个更早的词元对其后所有词元隐藏；比较它的词元与第二名</translation>
        </message>
        <message>
            <source>Cancel</source>
            <translation>取消</translation>
        </message>
        <message>
            <source>knock-out: {done} / {total} positions</source>
            <translation>屏蔽：{done} / {total} 个位置</translation>
        </message>
        <message>
            <source>Why A, not B?</source>
            <translation>为什么是 A 而不是 B？</translation>
        </message>
        <message>
            <source>Select a step and press Y, or right-click a candidate in the Step tab: every earlier token is hidden from every later one in turn, and the change of logit(A) − logit(B) is its push.</source>
            <translation>选择一步并按 Y，或在“步”标签页中右键点击一个候选：依次把每个更早的词元对其后所有词元隐藏，logit(A) − logit(B) 的变化就是它的推力。</translation>
        </message>
        <message>
            <source>no depth split: {reason}</source>
            <translation>没有按深度的拆分：{reason}</translation>
        </message>
    </context>
</TS>
